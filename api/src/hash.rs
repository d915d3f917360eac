//! The one stable hash of the project: FNV-1a, 64 bit.
//!
//! Unlike `std`'s hasher its value never changes between builds or
//! releases, so it can name objects, stamp spec hashes and place nodes in
//! a spread window that survive restarts and upgrades.

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `parts` joined by single 0 bytes (so `["ab", "c"]` and
/// `["a", "bc"]` differ).
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    fnv1a_seeded(0, parts)
}

/// [`fnv1a`] started from the offset basis XOR `seed`: one family of
/// hashes per seed, so two processes with different seeds place the same
/// key differently. Seed 0 is plain [`fnv1a`].
pub fn fnv1a_seeded(seed: u64, parts: &[&[u8]]) -> u64 {
    match parts.split_first() {
        Some((first, rest)) => fnv1a_more(bytes(OFFSET ^ seed, first), rest),
        None => OFFSET ^ seed,
    }
}

/// [`fnv1a`] continued: from the value of some parts, the value of those
/// parts followed by `parts`, so `fnv1a_more(fnv1a(&[a]), &[b])` is
/// `fnv1a(&[a, b])`. Lets a caller hash a common first part once.
pub fn fnv1a_more(h: u64, parts: &[&[u8]]) -> u64 {
    parts.iter().fold(h, |h, part| bytes(step(h, 0), part))
}

/// One FNV-1a step: the byte in, then the multiply.
fn step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(PRIME)
}

/// FNV-1a steps over `part`, from `h`.
fn bytes(h: u64, part: &[u8]) -> u64 {
    part.iter().fold(h, |h, b| step(h, *b))
}

/// The SplitMix64 finaliser: every input bit reaches every output bit.
/// FNV-1a's last bytes barely touch its high bits, so keys differing in
/// one trailing byte hash close together; mixed, they land far apart,
/// which matters when the high bits pick a position or a rank.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// [`fnv1a`] of `bytes` as 16 lowercase hex digits.
pub fn fnv1a_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a(&[bytes]))
}

/// [`fnv1a`] as a [`std::hash::Hasher`], for hash maps keyed by small
/// values the process picks itself (addresses, sequence numbers), where
/// `std`'s DoS-resistant hasher costs more than the lookup.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(OFFSET)
    }
}

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, data: &[u8]) {
        self.0 = bytes(self.0, data);
    }
}

/// Builds [`Fnv`] hashers: `HashMap<K, V, FnvBuild>`.
pub type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuing_a_hash_equals_hashing_all_parts_at_once() {
        for (a, b) in [("node-1", "node-2"), ("", ""), ("ab", "c"), ("a", "")] {
            let whole = fnv1a(&[a.as_bytes(), b.as_bytes()]);
            assert_eq!(fnv1a_more(fnv1a(&[a.as_bytes()]), &[b.as_bytes()]), whole);
        }
        assert_eq!(fnv1a_more(7, &[]), 7);
    }

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a(&[b""]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(&[b"foobar"]), 0x8594_4171_f739_67e8);
        assert_eq!(fnv1a_hex(b"a"), "af63dc4c8601ec8c");
    }

    #[test]
    fn seed_zero_is_plain_fnv1a_and_other_seeds_give_other_values() {
        assert_eq!(fnv1a_seeded(0, &[b"a", b"b"]), fnv1a(&[b"a", b"b"]));
        assert_eq!(fnv1a_seeded(1, &[b"10.16.0.1"]), 0xeda8_2efa_94b1_ff0d);
        assert_eq!(fnv1a_seeded(0xdead_beef, &[b""]), 0xcbf2_9ce4_5a8f_9dca);
    }

    #[test]
    fn mix64_is_the_splitmix64_finaliser() {
        // SplitMix64 seeded with 0 first outputs mix64 of its increment;
        // the reference implementation gives 0xe220a8397b1dcdaf.
        assert_eq!(mix64(0x9e37_79b9_7f4a_7c15), 0xe220_a839_7b1d_cdaf);
        assert_eq!(mix64(0), 0);
        assert_eq!(mix64(1), 0x5692_161d_100b_05e5);
    }

    #[test]
    fn the_hasher_gives_fnv1a_of_the_bytes_written() {
        use std::hash::Hasher;
        let mut h = Fnv::default();
        h.write(b"foo");
        h.write(b"bar");
        assert_eq!(h.finish(), fnv1a(&[b"foobar"]));
    }

    #[test]
    fn parts_are_separated_so_shifting_a_byte_changes_the_hash() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"a", b"b"]), fnv1a(&[b"a\0b"]));
    }
}

//! Kernel-side filters for raw ICMP sockets.
//!
//! A raw ICMP socket receives a copy of every ICMP message the host gets,
//! including the echo requests of every ping on the machine (and, on
//! loopback, its own). Letting only echo replies and the errors that can
//! answer a probe through halves the packets read per probe on loopback and
//! keeps unrelated ICMP traffic out of the pinger.

use std::io;
use std::os::unix::io::RawFd;

/// `SOL_RAW`/`ICMP_FILTER` (linux/icmp.h): a 32-bit mask, a set bit drops
/// that ICMPv4 type.
const SOL_RAW: i32 = 255;
const ICMP_FILTER: i32 = 1;
/// `IPPROTO_ICMPV6`/`ICMP6_FILTER` (linux/icmpv6.h): 256 bits, a set bit
/// drops that ICMPv6 type.
const IPPROTO_ICMPV6: i32 = 58;
const ICMP6_FILTER: i32 = 1;

/// ICMPv4 types let through: echo reply, destination unreachable, time
/// exceeded.
const V4_PASS: [u8; 3] = [0, 3, 11];
/// ICMPv6 types let through: destination unreachable, time exceeded,
/// echo reply.
const V6_PASS: [u8; 3] = [1, 3, 129];

/// The ICMPv4 filter mask. Pure.
pub(super) fn v4_mask() -> u32 {
    V4_PASS.iter().fold(u32::MAX, |m, t| m & !(1 << t))
}

/// The ICMPv6 filter words. Pure.
pub(super) fn v6_words() -> [u32; 8] {
    let mut w = [u32::MAX; 8];
    for t in V6_PASS {
        w[usize::from(t >> 5)] &= !(1 << (t & 31));
    }
    w
}

/// Sets the filter on raw socket `fd`.
#[allow(
    unsafe_code,
    reason = "ICMP_FILTER and ICMP6_FILTER have no safe wrapper in socket2 or nix; the option value is a plain local array of the size passed"
)]
pub(super) fn replies_only(fd: RawFd, v6: bool) -> io::Result<()> {
    let v4 = v4_mask();
    let v6w = v6_words();
    let (level, name, ptr, len) = if v6 {
        (
            IPPROTO_ICMPV6,
            ICMP6_FILTER,
            v6w.as_ptr().cast::<nix::libc::c_void>(),
            std::mem::size_of_val(&v6w),
        )
    } else {
        (
            SOL_RAW,
            ICMP_FILTER,
            std::ptr::from_ref(&v4).cast::<nix::libc::c_void>(),
            std::mem::size_of_val(&v4),
        )
    };
    // SAFETY: `ptr` points to `len` initialised bytes that live until the
    // call returns; the kernel copies them.
    let rc = unsafe { nix::libc::setsockopt(fd, level, name, ptr, len as nix::libc::socklen_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_socket_filters_pass_only_replies_and_errors() {
        let m = v4_mask();
        for passed in [0, 3, 11] {
            assert_eq!(m & (1 << passed), 0, "type {passed} passes");
        }
        assert_ne!(m & (1 << 8), 0, "echo requests are dropped");
        let w = v6_words();
        let blocked = |t: usize| w[t / 32] & (1 << (t % 32)) != 0;
        assert!(!blocked(129) && !blocked(1) && !blocked(3));
        assert!(blocked(128), "echo requests are dropped");
        assert!(blocked(135), "neighbour solicitations are dropped");
    }
}

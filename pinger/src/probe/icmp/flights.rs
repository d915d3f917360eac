//! The echo requests of one socket still waiting for their reply, by
//! sequence number. Pure.
//!
//! The sequence number alone finds a reply's probe: it is handed out by the
//! socket, not per address, and never to two probes waiting at once, so a
//! reply costs one array index, not a hash of its address. The kernel
//! rewrites the identifier on a datagram socket but leaves the sequence as
//! sent; the caller still checks that the reply came from the address the
//! probe went to.

/// Whose probe a sequence number is: the engine's slot and the probe's
/// place in its round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flight {
    /// The target's slot in the engine.
    pub slot: u32,
    /// The probe's index in its round.
    pub probe: u32,
}

const FREE: Flight = Flight {
    slot: u32::MAX,
    probe: u32::MAX,
};

/// One entry per sequence number: 512 KiB per socket, allocated when the
/// socket opens.
pub struct Flights {
    by_seq: Vec<Flight>,
    next: u16,
    waiting: usize,
}

impl Default for Flights {
    fn default() -> Self {
        Flights {
            by_seq: vec![FREE; 1 << 16],
            next: 0,
            waiting: 0,
        }
    }
}

impl Flights {
    /// A sequence number for `flight`: the next one no probe waits on.
    /// `None` when all 65,536 wait, which at one probe per target a
    /// second needs a timeout of a minute over 1,000 targets.
    pub fn start(&mut self, flight: Flight) -> Option<u16> {
        if self.waiting == self.by_seq.len() {
            return None;
        }
        loop {
            self.next = self.next.wrapping_add(1);
            let entry = &mut self.by_seq[usize::from(self.next)];
            if *entry == FREE {
                *entry = flight;
                self.waiting += 1;
                return Some(self.next);
            }
        }
    }

    /// Whose probe `seq` is, if one waits on it; the entry stays.
    pub fn get(&self, seq: u16) -> Option<Flight> {
        let f = self.by_seq[usize::from(seq)];
        (f != FREE).then_some(f)
    }

    /// Frees `seq` when `flight` waits on it.
    pub fn end(&mut self, seq: u16, flight: Flight) {
        let entry = &mut self.by_seq[usize::from(seq)];
        if *entry == flight {
            *entry = FREE;
            self.waiting -= 1;
        }
    }

    /// How many probes wait.
    pub fn waiting(&self) -> usize {
        self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(slot: u32, probe: u32) -> Flight {
        Flight { slot, probe }
    }

    #[test]
    fn a_sequence_number_is_never_given_to_two_waiting_probes() {
        let mut fl = Flights::default();
        let first = fl.start(f(0, 0)).unwrap();
        // Every other number is handed out and returned; the first still waits.
        for _ in 0..(1 << 16) {
            let seq = fl.start(f(1, 0)).unwrap();
            assert_ne!(seq, first);
            fl.end(seq, f(1, 0));
        }
        assert_eq!(fl.get(first), Some(f(0, 0)));
        assert_eq!(fl.waiting(), 1);
    }

    #[test]
    fn ending_a_flight_frees_its_number_only_for_its_own_probe() {
        let mut fl = Flights::default();
        let seq = fl.start(f(3, 1)).unwrap();
        fl.end(seq, f(3, 2));
        assert_eq!(fl.get(seq), Some(f(3, 1)), "another probe's end is ignored");
        fl.end(seq, f(3, 1));
        assert_eq!(fl.get(seq), None);
        assert_eq!(fl.waiting(), 0);
    }

    #[test]
    fn a_full_table_gives_no_number() {
        let mut fl = Flights::default();
        for i in 0..(1u32 << 16) {
            assert!(fl.start(f(i, 0)).is_some());
        }
        assert_eq!(fl.start(f(0, 1)), None);
    }
}

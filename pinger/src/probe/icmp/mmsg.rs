//! The batched system calls of an ICMP socket: every queued request with one
//! `sendmmsg`, every waiting message with one `recvmmsg`, with the kernel's
//! receive time of each.

use std::io;
use std::net::IpAddr;
use std::os::fd::RawFd;
use std::time::{Duration, SystemTime};

use socket2::{SockAddr, SockAddrStorage};

use super::flights::Flight;

/// An echo request not sent yet: what a batch hands the kernel.
pub(super) struct Request {
    /// Its destination, made when queued.
    pub(super) to: SockAddr,
    pub(super) packet: [u8; super::packet::REQUEST],
    pub(super) seq: u16,
    pub(super) flight: Flight,
}

/// Most messages one `sendmmsg` or `recvmmsg` handles.
pub(super) const BATCH: usize = 64;

/// Room for one received message: an IPv4 header with options, an ICMP
/// error quoting a request, or an echo reply of [`PAYLOAD`](super::packet::PAYLOAD).
pub(super) const MESSAGE: usize = 576;

/// Sends `requests` (at most [`BATCH`]) with one `sendmmsg`; returns how
/// many the kernel took. The headers live on the stack and each request
/// carries its address ready made: nothing is allocated per tick.
#[allow(
    unsafe_code,
    reason = "sendmmsg has no safe wrapper in socket2; every pointer handed to the kernel points into locals that outlive the call"
)]
pub(super) fn send_batch(fd: RawFd, requests: &[Request]) -> io::Result<usize> {
    use nix::libc;
    let requests = &requests[..requests.len().min(BATCH)];
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; BATCH];
    // SAFETY: mmsghdr is plain data; all-zero is a valid value.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for ((r, iov), m) in requests.iter().zip(&mut iovs).zip(&mut msgs) {
        iov.iov_base = r.packet.as_ptr() as *mut libc::c_void;
        iov.iov_len = r.packet.len();
        m.msg_hdr.msg_name = r.to.as_ptr() as *mut libc::c_void;
        m.msg_hdr.msg_namelen = r.to.len();
        m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
        m.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the first `requests.len()` headers' name and iovec pointers
    // point into `iovs` and the requests' addresses and packets, all alive
    // until the call returns; the kernel only reads them.
    let n = unsafe {
        libc::sendmmsg(
            fd,
            msgs.as_mut_ptr(),
            requests.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One message read by [`receive_batch`].
pub(super) struct Received {
    /// Its length in its buffer.
    pub(super) len: usize,
    /// Its sender.
    pub(super) from: Option<IpAddr>,
    /// When the kernel received it (`SO_TIMESTAMPNS`).
    pub(super) at: Option<SystemTime>,
}

/// Room for the control messages of one received message: one
/// `SCM_TIMESTAMPNS` (a `timespec` after its header), 8-byte aligned.
type Control = [u64; 8];

/// The buffers [`receive_batch`] reads into, [`BATCH`] of each, made once
/// per socket: a read used to allocate and zero 16 KiB of them, which was
/// a fifth of the pinger's instructions per probe (docs/benchmarks.md,
/// "Cutting the cost per tick").
pub(super) struct Inbox {
    /// The messages' bytes.
    pub(super) bufs: Vec<[u8; MESSAGE]>,
    names: Vec<nix::libc::sockaddr_storage>,
    controls: Vec<Control>,
    /// What the last read got, in order, for the messages in `bufs`.
    pub(super) received: Vec<Received>,
}

impl Default for Inbox {
    #[allow(
        unsafe_code,
        reason = "sockaddr_storage has no constructor in libc; it is plain data"
    )]
    fn default() -> Self {
        // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
        let name: nix::libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        Inbox {
            bufs: vec![[0; MESSAGE]; BATCH],
            names: vec![name; BATCH],
            controls: vec![[0; 8]; BATCH],
            received: Vec::with_capacity(BATCH),
        }
    }
}

/// Reads the waiting messages into `inbox` with one `recvmmsg`: afterwards
/// `inbox.received` has, in order, each message's length, sender and kernel
/// receive time.
#[allow(
    unsafe_code,
    reason = "recvmmsg and the CMSG macros have no safe wrapper in socket2; the kernel writes only into the buffers, address storage and control buffers passed, whose sizes it is given"
)]
pub(super) fn receive_batch(fd: RawFd, inbox: &mut Inbox) -> io::Result<()> {
    use nix::libc;
    inbox.received.clear();
    let mut iovs = [libc::iovec {
        iov_base: std::ptr::null_mut(),
        iov_len: 0,
    }; BATCH];
    // SAFETY: mmsghdr is plain data; all-zero is a valid value.
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    let count = inbox.bufs.len().min(BATCH);
    let slots = inbox
        .bufs
        .iter_mut()
        .zip(&mut inbox.names)
        .zip(&mut inbox.controls);
    for (((buf, name), control), (iov, m)) in slots.zip(iovs.iter_mut().zip(&mut msgs)) {
        iov.iov_base = buf.as_mut_ptr().cast();
        iov.iov_len = buf.len();
        m.msg_hdr.msg_name = std::ptr::from_mut(name).cast();
        m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_control = control.as_mut_ptr().cast();
        m.msg_hdr.msg_controllen = std::mem::size_of::<Control>();
    }
    // SAFETY: each of the first `count` headers points at one buffer, one
    // sockaddr_storage and one control buffer of the lengths it states, all
    // alive and not otherwise borrowed until the call returns.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            count as libc::c_uint,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    for (m, name) in msgs.iter().zip(&inbox.names).take(n as usize) {
        let mut at = None;
        // SAFETY: the kernel wrote `msg_controllen` bytes of control messages
        // into this header's control buffer; the CMSG macros stay within it,
        // and an SCM_TIMESTAMPNS message carries a timespec.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&raw const m.msg_hdr);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                    at = Some(
                        SystemTime::UNIX_EPOCH + Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32),
                    );
                }
                c = libc::CMSG_NXTHDR(&raw const m.msg_hdr, c);
            }
        }
        let mut storage = SockAddrStorage::zeroed();
        // SAFETY: `view_as` a sockaddr_storage, which SockAddrStorage wraps;
        // the kernel wrote a socket address of `msg_namelen` bytes into
        // `name`, which `SockAddr::new` reads no further than.
        let addr = unsafe {
            *storage.view_as::<libc::sockaddr_storage>() = *name;
            SockAddr::new(storage, m.msg_hdr.msg_namelen)
        };
        inbox.received.push(Received {
            len: (m.msg_len as usize).min(MESSAGE),
            from: addr.as_socket().map(|a| a.ip()),
            at,
        });
    }
    Ok(())
}

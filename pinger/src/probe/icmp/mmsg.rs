//! The batched system calls of an ICMP socket: every queued request with one
//! `sendmmsg`, every waiting message with one `recvmmsg`, with the kernel's
//! receive time of each.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::time::{Duration, SystemTime};

use socket2::{SockAddr, SockAddrStorage};

use super::socket::Request;

/// Most messages one `sendmmsg` or `recvmmsg` handles.
pub(super) const BATCH: usize = 64;

/// Room for one received message: an IPv4 header with options, an ICMP
/// error quoting a request, or an echo reply of [`PAYLOAD`](super::packet::PAYLOAD).
pub(super) const MESSAGE: usize = 576;

/// Sends `requests` with one `sendmmsg`; returns how many the kernel took.
#[allow(
    unsafe_code,
    reason = "sendmmsg has no safe wrapper in socket2; every pointer handed to the kernel points into locals that outlive the call"
)]
pub(super) fn send_batch(fd: RawFd, requests: &[Request]) -> io::Result<usize> {
    use nix::libc;
    let addrs: Vec<SockAddr> = requests
        .iter()
        .map(|r| SockAddr::from(SocketAddr::new(r.to, 0)))
        .collect();
    let mut iovs: Vec<libc::iovec> = requests
        .iter()
        .map(|r| libc::iovec {
            iov_base: r.packet.as_ptr() as *mut libc::c_void,
            iov_len: r.packet.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = addrs
        .iter()
        .zip(iovs.iter_mut())
        .map(|(a, iov)| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = a.as_ptr() as *mut libc::c_void;
            m.msg_hdr.msg_namelen = a.len();
            m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    // SAFETY: `msgs` holds `msgs.len()` headers whose name and iovec pointers
    // point into `addrs`, `iovs` and the requests' packets, all alive until
    // the call returns; the kernel only reads them.
    let n = unsafe {
        libc::sendmmsg(
            fd,
            msgs.as_mut_ptr(),
            msgs.len() as libc::c_uint,
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

/// Reads the waiting messages into `bufs` with one `recvmmsg`; returns, in
/// order, each message's length, sender and kernel receive time.
#[allow(
    unsafe_code,
    reason = "recvmmsg and the CMSG macros have no safe wrapper in socket2; the kernel writes only into the buffers, address storage and control buffers passed, whose sizes it is given"
)]
pub(super) fn receive_batch(fd: RawFd, bufs: &mut [[u8; MESSAGE]]) -> io::Result<Vec<Received>> {
    use nix::libc;
    let count = bufs.len();
    let mut names: Vec<SockAddrStorage> = (0..count).map(|_| SockAddrStorage::zeroed()).collect();
    let mut controls: Vec<Control> = vec![[0; 8]; count];
    let mut iovs: Vec<libc::iovec> = bufs
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: b.as_mut_ptr().cast(),
            iov_len: b.len(),
        })
        .collect();
    let mut msgs: Vec<libc::mmsghdr> = names
        .iter_mut()
        .zip(iovs.iter_mut())
        .zip(controls.iter_mut())
        .map(|((name, iov), control)| {
            // SAFETY: mmsghdr is plain data; all-zero is a valid value.
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_name = std::ptr::from_mut(name).cast();
            m.msg_hdr.msg_namelen = name.size_of();
            m.msg_hdr.msg_iov = std::ptr::from_mut(iov);
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = control.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of::<Control>();
            m
        })
        .collect();
    // SAFETY: every header points at one buffer, one sockaddr_storage and one
    // control buffer of the lengths it states, all alive and not otherwise
    // borrowed until the call returns.
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
    let mut heads = Vec::with_capacity(n as usize);
    for m in msgs.iter().take(n as usize) {
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
        heads.push((m.msg_len, m.msg_hdr.msg_namelen, at));
    }
    drop(msgs);
    let mut out = Vec::with_capacity(heads.len());
    for ((len, namelen, at), name) in heads.into_iter().zip(names) {
        // SAFETY: the kernel wrote a socket address of `namelen` bytes into
        // this storage.
        let addr = unsafe { SockAddr::new(name, namelen) };
        out.push(Received {
            len: (len as usize).min(MESSAGE),
            from: addr.as_socket().map(|a| a.ip()),
            at,
        });
    }
    Ok(out)
}

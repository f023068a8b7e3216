//! Socket set-up and options the event loop needs beyond what io_uring does: creating
//! dual-stack sockets, their addresses, and the receive low-water mark.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Sets the socket's `SO_RCVLOWAT` to `bytes` unless it is already that; returns
/// whether the socket now has that setting. A failure leaves the old setting, which
/// at worst delays a wake-up until the stall timeout ends the attempt.
pub(super) fn set_low_water(socket: &OwnedFd, current: &mut usize, bytes: usize) -> bool {
    let bytes = bytes.max(1);
    if *current == bytes {
        return true;
    }
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt with a pointer to a live int of the right size.
    let done = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if done == 0 {
        *current = bytes;
    }
    done == 0
}

/// The connected socket's TCP maximum segment size (`TCP_MAXSEG`): the kernel's
/// segment size for the path, from the route MTU and the peer's advertised MSS, so a
/// value above 1500 means jumbo frames end to end without an ICMP probe.
pub(super) fn segment_size(socket: &OwnedFd) -> Option<u32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt with pointers to a live int and its length.
    let done = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (done == 0 && value > 0).then_some(value as u32)
}

pub(super) fn new_socket() -> std::io::Result<OwnedFd> {
    // IPv6 sockets with v4-mapped addresses serve both families with one sockaddr type.
    // SAFETY: plain socket creation; the result is checked.
    let raw = unsafe { libc::socket(libc::AF_INET6, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let one: libc::c_int = 1;
    let zero: libc::c_int = 0;
    // SAFETY: setsockopt with pointers to live ints of the right size.
    unsafe {
        libc::setsockopt(
            raw,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        libc::setsockopt(
            raw,
            libc::IPPROTO_IPV6,
            libc::IPV6_V6ONLY,
            (&zero as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    Ok(fd)
}

pub(super) fn to_sockaddr(addr: &SocketAddr) -> libc::sockaddr_in6 {
    let v6 = match addr {
        SocketAddr::V4(v4) => {
            std::net::SocketAddrV6::new(v4.ip().to_ipv6_mapped(), v4.port(), 0, 0)
        }
        SocketAddr::V6(v6) => *v6,
    };
    // SAFETY: sockaddr_in6 is plain data; all-zero is a valid value.
    let mut sa: libc::sockaddr_in6 = unsafe { std::mem::zeroed() };
    sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
    sa.sin6_port = v6.port().to_be();
    sa.sin6_addr.s6_addr = v6.ip().octets();
    sa.sin6_flowinfo = v6.flowinfo();
    sa.sin6_scope_id = v6.scope_id();
    sa
}

//! A non-blocking connect with socket options set before it: a slow reader's
//! small receive buffer and segment size must be in place before the
//! handshake (std and mio connect at once).

use mio::net::TcpStream;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};

fn set_int(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: setsockopt on a socket we own with a live int.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An Ethernet path's segment size, for slow readers. On loopback the MSS
/// is 64 KiB and the server's send buffer grows with it (tcp_wmem's 4 MiB):
/// measured here, a server wrote 2.9 MB to a 4 KiB-buffer reader before
/// blocking, so a 1 MiB answer never held it; with this MSS, 74 KB.
const SLOW_MSS: libc::c_int = 1460;

/// Start connecting to `addr`; `slow_rcvbuf`: a slow reader's SO_RCVBUF in
/// bytes, set first with an Ethernet MSS, so backpressure reaches the server.
/// The connect completes (or fails) later, reported by the poll.
pub fn connect(addr: SocketAddr, slow_rcvbuf: Option<usize>) -> io::Result<TcpStream> {
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: plain syscall; the fd is owned at once.
    let raw = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh socket nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if let Some(n) = slow_rcvbuf {
        set_int(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, n.min(i32::MAX as usize) as libc::c_int)?;
        set_int(&fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, SLOW_MSS)?;
    }
    // single header bytes go out when written, not coalesced
    set_int(&fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    // SAFETY: zeroed sockaddr storage filled for the address family.
    let (storage, len) = unsafe {
        let mut st: libc::sockaddr_storage = std::mem::zeroed();
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = &mut *(&mut st as *mut libc::sockaddr_storage as *mut libc::sockaddr_in);
                sin.sin_family = libc::AF_INET as libc::sa_family_t;
                sin.sin_port = a.port().to_be();
                sin.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
                std::mem::size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = &mut *(&mut st as *mut libc::sockaddr_storage as *mut libc::sockaddr_in6);
                sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sin6.sin6_port = a.port().to_be();
                sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
                sin6.sin6_flowinfo = a.flowinfo();
                sin6.sin6_scope_id = a.scope_id();
                std::mem::size_of::<libc::sockaddr_in6>()
            }
        };
        (st, len as libc::socklen_t)
    };
    use std::os::fd::AsRawFd;
    // SAFETY: `storage` holds a sockaddr of `len` bytes.
    let r = unsafe { libc::connect(fd.as_raw_fd(), &storage as *const libc::sockaddr_storage as *const libc::sockaddr, len) };
    if r != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(TcpStream::from_std(std::net::TcpStream::from(fd)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connects_with_a_small_receive_buffer() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = connect(l.local_addr().unwrap(), Some(4096)).unwrap();
        let (_peer, from) = l.accept().unwrap();
        // the connect may still be in flight on our side for a moment
        let t = std::time::Instant::now();
        while s.peer_addr().is_err() && t.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(s.local_addr().unwrap(), from);
        use std::os::fd::AsRawFd;
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt into a live int.
        unsafe { libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUF, &mut v as *mut _ as *mut libc::c_void, &mut len) };
        assert!(v <= 2 * 4096, "SO_RCVBUF {v}: the kernel doubles what is asked, no more");
    }
}

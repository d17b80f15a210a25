//! The plain TCP transport: the socket's bytes are the protocol's bytes. Reads
//! go straight into the connection's read buffer and writes straight from its
//! write buffer: no copy beyond the kernel's. Owns: those two moves, and
//! telling where a non-blocking connect stands. May use: std and mio only.

use std::io::{self, Read, Write};

/// Read from `src` into `dst`: Ok((n, short)), n == 0 when the peer closed,
/// `short` when the read came back short (the socket is drained).
#[inline]
pub fn read_from<R: Read>(src: &mut R, dst: &mut [u8]) -> io::Result<(usize, bool)> {
    let n = src.read(dst)?;
    Ok((n, n < dst.len()))
}

/// Write `wbuf[*wpos..]` to `dst` until it is all written (then `wbuf` is
/// emptied) or `dst` would block. False: the write failed.
#[inline]
pub fn write_to<W: Write>(wbuf: &mut Vec<u8>, wpos: &mut usize, dst: &mut W) -> bool {
    while *wpos < wbuf.len() {
        match dst.write(&wbuf[*wpos..]) {
            Ok(0) => break,
            Ok(n) => *wpos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if *wpos == wbuf.len() {
        wbuf.clear();
        *wpos = 0;
        return true;
    }
    false
}

/// Hand the queued bytes to a backend's (empty) send buffer: the two buffers
/// trade places, no copy, no allocation. Returns whether there is anything.
#[inline]
pub fn fill(wbuf: &mut Vec<u8>, wpos: &mut usize, out: &mut Vec<u8>) -> bool {
    if wbuf.is_empty() {
        return false;
    }
    std::mem::swap(wbuf, out);
    wbuf.clear();
    *wpos = 0;
    true
}

/// Where a non-blocking connect stands once its socket reports an event:
/// Ok(true) connected, Ok(false) still in progress (a spurious wake-up),
/// Err(()) failed. Shared by the workers' epoll loop and the noise thread.
pub fn connect_state(s: &mio::net::TcpStream) -> Result<bool, ()> {
    match s.take_error() {
        Ok(Some(_)) | Err(_) => Err(()),
        Ok(None) => match s.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotConnected => Ok(false),
            Err(_) => Err(()),
        },
    }
}

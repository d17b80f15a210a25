//! The io_uring backend (`--io uring`): every send, receive and connect a
//! loop turn queues goes to the kernel in the one io_uring_enter that also
//! waits for completions. A connection holds one multishot receive (kernel
//! 6.0+; a single-shot one re-armed per completion before that) filling
//! buffers from a provided-buffer ring, copied into the connection's read
//! buffer and parsed by the same machinery as the epoll backend. No SQPOLL:
//! a kernel thread polling on another CPU would take CPU from the server.
//! Owns: the ring, its buffers and the sockets. What is sent and what is
//! received go through the connection's transport link (`Conn::fill`,
//! `Net::received_from`), so the same operations carry plaintext or TLS
//! records without this file knowing which. May use: `net` (the machinery it
//! reports to), `bufring`, `timer`, `record`'s error classes.

use crate::bufring::BufRing;
use crate::models::Model;
use crate::net::{Net, Sockets};
use crate::record::ErrorClass;
use crate::timer::Monotonic;
use io_uring::types::{Fd, SubmitArgs, TimeoutFlags, Timespec};
use io_uring::{cqueue, opcode, squeue, IoUring};
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::time::Instant;

const BGID: u16 = 0;
const BUFS: u16 = 512;
const BUF_SIZE: usize = 4096;

/// What a completion is for; in the top bits of its user_data.
const CONNECT: u64 = 0;
const RECV: u64 = 1;
const SEND: u64 = 2;
const CANCEL: u64 = 3;
/// The loop's wake-up timeout, and an update of its deadline.
const TIMER: u64 = 4;
const TIMER_UPDATE: u64 = 5;

fn user_data(kind: u64, i: usize, generation: u32) -> u64 {
    kind << 61 | ((generation as u64) & 0x1fff_ffff) << 32 | i as u64
}

fn decode(ud: u64) -> (u64, usize, u32) {
    (ud >> 61, (ud & 0xffff_ffff) as usize, ((ud >> 32) & 0x1fff_ffff) as u32)
}

#[derive(Default)]
struct Slot {
    fd: Option<RawFd>,
    /// Bumped at every close: completions of an earlier socket are stale.
    generation: u32,
    connecting: bool,
    recv_armed: bool,
    /// A send is in the kernel, reading `sending` (of generation `send_gen`).
    send_busy: bool,
    send_gen: u32,
    sending: Vec<u8>,
    spos: usize,
}

pub struct Uring {
    ring: IoUring,
    bufs: BufRing,
    multishot: bool,
    slots: Vec<Slot>,
    /// The target as a sockaddr, boxed: connects in the kernel read it.
    addr: Option<(Box<libc::sockaddr_storage>, libc::socklen_t)>,
    /// Completions of one wait, copied out (capacity kept: no allocation).
    cqes: Vec<(u64, i32, u32)>,
    /// The deadline of the timeout in the kernel, if one is pending. Like the
    /// epoll backend's timerfd it stays armed across waits and moves only
    /// when an earlier wake is needed: a timeout per wait would program the
    /// clock hardware (a VM exit in a guest) on every turn.
    timer_at: Option<Instant>,
    /// Its absolute deadline, read by the kernel when the entry is submitted.
    timer_ts: Box<Timespec>,
    clock: Monotonic,
}

/// Multishot receive needs kernel 6.0.
fn kernel_at_least(major: u32, minor: u32) -> bool {
    // SAFETY: uname fills a zeroed utsname.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return false;
    }
    // SAFETY: uname NUL-terminates release.
    let rel = unsafe { std::ffi::CStr::from_ptr(u.release.as_ptr()) }.to_string_lossy();
    let mut it = rel.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    let (a, b) = (it.next().unwrap_or(0), it.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

fn new_ring() -> io::Result<IoUring> {
    // completions are run when the loop waits (6.1+); older kernels take the plain ring
    IoUring::builder()
        .setup_cqsize(16384)
        .setup_single_issuer()
        .setup_coop_taskrun()
        .setup_defer_taskrun()
        .build(2048)
        .or_else(|_| IoUring::builder().setup_cqsize(16384).build(2048))
}

/// Why io_uring cannot run here (None: it can): a ring, the opcodes this
/// backend uses and a provided-buffer ring (5.19+) must all be available.
pub fn unavailable() -> Option<String> {
    let ring = match new_ring() {
        Ok(r) => r,
        Err(e) => return Some(format!("io_uring_setup failed: {e}")),
    };
    let mut probe = io_uring::Probe::new();
    if let Err(e) = ring.submitter().register_probe(&mut probe) {
        return Some(format!("io_uring probe failed: {e}"));
    }
    for (code, name) in [(opcode::Connect::CODE, "connect"), (opcode::Send::CODE, "send"), (opcode::Recv::CODE, "recv"), (opcode::AsyncCancel::CODE, "cancel")] {
        if !probe.is_supported(code) {
            return Some(format!("io_uring has no {name}"));
        }
    }
    match BufRing::new(&ring, 2, 64, BGID) {
        Ok(mut b) => b.unregister(&ring),
        Err(e) => return Some(format!("io_uring provided-buffer rings need Linux 5.19+: {e}")),
    }
    None
}

impl Uring {
    pub fn new() -> io::Result<Uring> {
        let ring = new_ring()?;
        let bufs = BufRing::new(&ring, BUFS, BUF_SIZE, BGID)?;
        // LOADGEN_URING_SINGLE_SHOT=1 takes the pre-6.0 path (for its tests)
        let multishot = kernel_at_least(6, 0) && std::env::var_os("LOADGEN_URING_SINGLE_SHOT").is_none();
        Ok(Uring {
            ring,
            bufs,
            multishot,
            slots: Vec::new(),
            addr: None,
            cqes: Vec::with_capacity(1024),
            timer_at: None,
            timer_ts: Box::new(Timespec::new()),
            clock: Monotonic::new(),
        })
    }

    /// Make sure a wait wakes by `at` (an earlier pending deadline is kept).
    fn arm(&mut self, at: Instant, now: Instant) {
        if self.timer_at.is_some_and(|a| a <= at && a > now) {
            return;
        }
        let ns = self.clock.ns(at);
        *self.timer_ts = Timespec::new().sec((ns / 1_000_000_000) as u64).nsec((ns % 1_000_000_000) as u32);
        let ts: *const Timespec = self.timer_ts.as_ref();
        let e = if self.timer_at.is_some() {
            opcode::TimeoutUpdate::new(user_data(TIMER, 0, 0), ts).flags(TimeoutFlags::ABS).build().user_data(user_data(TIMER_UPDATE, 0, 0))
        } else {
            opcode::Timeout::new(ts).flags(TimeoutFlags::ABS).build().user_data(user_data(TIMER, 0, 0))
        };
        self.timer_at = Some(at);
        self.push(e);
    }

    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every buffer and address an entry points to (a slot's
        // `sending`, the boxed sockaddr) outlives the operation.
        while unsafe { self.ring.submission().push(&e) }.is_err() {
            let _ = self.ring.submit(); // full: hand the batch over now
        }
    }

    fn sockaddr(&mut self, addr: SocketAddr) -> (*const libc::sockaddr, libc::socklen_t) {
        let (sa, len) = self.addr.get_or_insert_with(|| {
            // SAFETY: all-zero is a valid sockaddr_storage.
            let mut ss: Box<libc::sockaddr_storage> = Box::new(unsafe { std::mem::zeroed() });
            let len = match addr {
                SocketAddr::V4(a) => {
                    // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
                    let sin = unsafe { &mut *(ss.as_mut() as *mut _ as *mut libc::sockaddr_in) };
                    sin.sin_family = libc::AF_INET as libc::sa_family_t;
                    sin.sin_port = a.port().to_be();
                    sin.sin_addr = libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) };
                    std::mem::size_of::<libc::sockaddr_in>()
                }
                SocketAddr::V6(a) => {
                    // SAFETY: as above, for sockaddr_in6.
                    let sin6 = unsafe { &mut *(ss.as_mut() as *mut _ as *mut libc::sockaddr_in6) };
                    sin6.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                    sin6.sin6_port = a.port().to_be();
                    sin6.sin6_addr = libc::in6_addr { s6_addr: a.ip().octets() };
                    sin6.sin6_scope_id = a.scope_id();
                    std::mem::size_of::<libc::sockaddr_in6>()
                }
            };
            (ss, len as libc::socklen_t)
        });
        (sa.as_ref() as *const _ as *const libc::sockaddr, *len)
    }

    fn arm_recv(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let Some(fd) = s.fd else { return };
        s.recv_armed = true;
        let ud = user_data(RECV, i, s.generation);
        let e = if self.multishot {
            opcode::RecvMulti::new(Fd(fd), BGID).build()
        } else {
            opcode::Recv::new(Fd(fd), std::ptr::null_mut(), BUF_SIZE as u32)
                .buf_group(BGID)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
        };
        self.push(e.user_data(ud));
    }

    /// Send the rest of slot `i`'s `sending`.
    fn push_send(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let Some(fd) = s.fd else { return };
        let rest = &s.sending[s.spos..];
        let e = opcode::Send::new(Fd(fd), rest.as_ptr(), rest.len() as u32).build().user_data(user_data(SEND, i, s.generation));
        s.send_busy = true;
        s.send_gen = s.generation;
        self.push(e);
    }
}

impl Sockets for Uring {
    fn connect(&mut self, i: usize, addr: SocketAddr) -> bool {
        let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
        // SAFETY: plain syscalls on a socket this slot then owns.
        let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return false;
        }
        let one: libc::c_int = 1;
        // SAFETY: a live c_int of the right size.
        unsafe {
            libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one as *const _ as *const libc::c_void, 4)
        };
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, Slot::default);
        }
        let (sa, len) = self.sockaddr(addr);
        let s = &mut self.slots[i];
        s.fd = Some(fd);
        s.connecting = true;
        s.recv_armed = false;
        let ud = user_data(CONNECT, i, s.generation);
        self.push(opcode::Connect::new(Fd(fd), sa, len).build().user_data(ud));
        // submitted now, not with the turn's batch: the kernel starts a connect
        // inline, and picking a port takes milliseconds when they run short; the
        // caller reads the clock between connects (see net::CLOCK_EVERY)
        let _ = self.ring.submit();
        true
    }

    fn close(&mut self, i: usize) {
        let Some(s) = self.slots.get_mut(i) else { return };
        let Some(fd) = s.fd.take() else { return };
        let (connecting, generation) = (s.connecting, s.generation);
        s.generation = s.generation.wrapping_add(1);
        s.connecting = false;
        s.recv_armed = false;
        if connecting {
            // a connect in the kernel keeps the socket alive until it ends
            self.push(opcode::AsyncCancel::new(user_data(CONNECT, i, generation)).build().user_data(user_data(CANCEL, i, 0)));
        }
        // entries naming this fd must reach the kernel before the number is reused
        let _ = self.ring.submit();
        // SAFETY: our socket; shutdown ends the receive and send holding it.
        unsafe {
            libc::shutdown(fd, libc::SHUT_RDWR);
            libc::close(fd);
        }
    }

    /// Each connection with new requests gets one send (none while one is
    /// still in the kernel: its completion sends what queued meanwhile).
    fn flush_dirty<M: Model>(net: &mut Net<'_, Self>, _m: &mut M, _now: Instant) {
        while let Some(i) = net.next_dirty() {
            start_send(net, i);
        }
    }

    fn wait<M: Model>(net: &mut Net<'_, Self>, m: &mut M, wake: Instant, now: Instant) -> io::Result<()> {
        let waited = if wake > now {
            net.sock.arm(wake, now);
            net.sock.ring.submitter().submit_and_wait(1)
        } else {
            // due now: completions so far, without sleeping
            let ts = Timespec::new();
            net.sock.ring.submitter().submit_with_args(1, &SubmitArgs::new().timespec(&ts))
        };
        match waited {
            Ok(_) => {}
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        let now = Instant::now();
        if net.plan.end.is_some_and(|e| now >= e) {
            return Ok(()); // responses after the end are not part of the run
        }
        let mut cqes = std::mem::take(&mut net.sock.cqes);
        cqes.clear();
        cqes.extend(net.sock.ring.completion().map(|c| (c.user_data(), c.result(), c.flags())));
        for &(ud, res, flags) in &cqes {
            complete(net, m, ud, res, flags, now);
        }
        net.sock.cqes = cqes;
        // requests the responses led to go out in the next wait's submit
        Self::flush_dirty(net, m, now);
        Ok(())
    }
}

impl Drop for Uring {
    fn drop(&mut self) {
        for s in &mut self.slots {
            if let Some(fd) = s.fd.take() {
                // SAFETY: our socket.
                unsafe { libc::close(fd) };
            }
        }
        self.bufs.unregister(&self.ring);
    }
}

/// Hand connection `i`'s queued requests to the kernel, if it can take them:
/// the link moves them into the slot's `sending` buffer (plaintext: the two
/// buffers trade places; TLS: records written into it), reused.
fn start_send(net: &mut Net<'_, Uring>, i: usize) {
    let c = &mut net.conns[i];
    let Some(s) = net.sock.slots.get_mut(i) else { return };
    if !c.open || !c.connected || s.send_busy {
        return;
    }
    if !c.fill(&mut s.sending) {
        return;
    }
    s.spos = 0;
    net.sock.push_send(i);
}

fn complete<M: Model>(net: &mut Net<'_, Uring>, m: &mut M, ud: u64, res: i32, flags: u32, now: Instant) {
    let (kind, i, generation) = decode(ud);
    if kind == TIMER || kind == TIMER_UPDATE {
        // the timeout fired, or an update found it gone (it fired first)
        if res != 0 {
            net.sock.timer_at = None;
        }
        return;
    }
    let bid = cqueue::buffer_select(flags);
    let Some(s) = net.sock.slots.get_mut(i) else { return };
    let current = s.fd.is_some() && s.generation == generation && net.conns[i].open;
    match kind {
        SEND => {
            s.send_busy = false;
            if !current || s.send_gen != s.generation {
                s.sending.clear(); // an earlier socket's send
                return start_send(net, i);
            }
            on_sent(net, m, i, res, now)
        }
        RECV if current => {
            if !cqueue::more(flags) {
                s.recv_armed = false;
            }
            on_received(net, m, i, res, bid, now)
        }
        RECV => {
            if let Some(b) = bid {
                net.sock.bufs.recycle(b);
            }
        }
        CONNECT if current => {
            s.connecting = false;
            if res < 0 {
                return net.fail(m, i, ErrorClass::Connect, now);
            }
            if !net.on_connected(m, i, now) {
                return;
            }
            net.sock.arm_recv(i);
            start_send(net, i);
        }
        _ => {} // a stale connect, a cancel
    }
}

fn on_sent<M: Model>(net: &mut Net<'_, Uring>, m: &mut M, i: usize, res: i32, now: Instant) {
    if res <= 0 {
        net.sock.slots[i].sending.clear();
        return net.fail(m, i, ErrorClass::Write, now);
    }
    let s = &mut net.sock.slots[i];
    s.spos += res as usize;
    if s.spos < s.sending.len() {
        return net.sock.push_send(i); // a short send: the rest
    }
    s.sending.clear();
    start_send(net, i);
}

fn on_received<M: Model>(net: &mut Net<'_, Uring>, m: &mut M, i: usize, res: i32, bid: Option<u16>, now: Instant) {
    if res == -libc::ENOBUFS {
        // every buffer was in use: they are back by now
        return net.sock.arm_recv(i);
    }
    if res < 0 {
        if let Some(b) = bid {
            net.sock.bufs.recycle(b);
        }
        return net.fail(m, i, ErrorClass::Read, now);
    }
    if res == 0 {
        return net.on_eof(m, i, now);
    }
    let Some(b) = bid else { return net.fail(m, i, ErrorClass::Read, now) };
    let generation = net.sock.slots[i].generation;
    let data = net.sock.bufs.data(b, res as usize);
    let more = net.received_from(m, i, now, data);
    net.sock.bufs.recycle(b);
    // the model may have closed the connection and opened another in the slot
    let s = &net.sock.slots[i];
    if more && net.conns[i].open && s.generation == generation && !s.recv_armed {
        net.sock.arm_recv(i);
    }
}

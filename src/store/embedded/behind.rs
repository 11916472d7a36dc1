//! The file under the embedded store: a redb storage backend that writes behind, handing
//! each page redb writes to a thread of its own, so that redb's writers do not wait for the
//! kernel's page cache while they hold its locks (only a sync waits for the disk).
//!
//! Why: redb writes the pages it evicts from its write buffer while it holds its
//! allocator's lock (`allocate_helper` → `PagedCachedFile::write`), and a `pwrite` of a page
//! into the page cache costs several microseconds, much more once the file passes a few
//! gigabytes. A bulk load writes its table and its index from two threads, which took turns
//! at that lock: the write phase of a load of 1,000,000 issues used 1.4 of the 2 cores, a
//! twentieth of its time in `futex` calls. Here a write copies the page into memory and
//! queues it; the writes reach the file in the order they were made; a read overlays the
//! queued writes it overlaps, and a length change, a sync or the release of a lock waits
//! until the writes made before it are in the file. The length is the file's: redb sets a
//! larger one before it writes past the end.
//!
//! What it holds: [`QUEUE_BYTES`] of pages waiting, and the one write that reaches past it;
//! a write then waits for the thread. After a write fails, every later call but the release
//! of a lock fails (stricter than redb's own backend, whose best-effort write-backs may fail
//! alone), so no commit can succeed over a lost page; the failure surfaces on the next call,
//! not on the write that queued the page.
//!
//! The thread also has the kernel start writing the file's pages to the disk, at most every
//! [`WRITEBACK_BYTES`] it writes, through a thread of its own, without waiting, so that the
//! disk works while the store does and a sync finds little left to write.
//!
//! The store opens redb with one writing process (its default), so the file's locks need no
//! more than the wait at their release.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use redb::{BackendError, StorageBackend};

/// The bytes of pages a writer may queue before it waits for the thread: enough that the
/// thread writes while the writers go on (a bulk load's eviction writes about 32 MiB between
/// two waits), little beside the store's cache.
pub(super) const QUEUE_BYTES: usize = 32 * 1024 * 1024;

/// What the writers and the thread share.
#[derive(Debug)]
struct Shared {
    file: Box<dyn StorageBackend>,
    /// The same file, to start its writeback through (see [`WRITEBACK_BYTES`]), how many
    /// times the write thread asked for it, and how many times it was started.
    writeback: Option<std::fs::File>,
    wakes: AtomicUsize,
    writebacks: AtomicUsize,
    /// The writes queued, for reads that find none without taking the lock (kept with the
    /// queue, under the lock).
    queued: AtomicUsize,
    state: Mutex<State>,
    /// Signalled when a write is queued to an empty queue, or the backend closes.
    work: Condvar,
    /// Signalled when the thread has written a batch, or failed.
    progress: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// The writes not yet known to be in the file, in the order they were made.
    queue: VecDeque<Write>,
    /// The same writes by offset, then order, for reads.
    by_offset: BTreeMap<(u64, u64), Arc<[u8]>>,
    /// The bytes in `queue`.
    bytes: usize,
    /// The longest write queued since the queue was last empty: a read looks this far back
    /// for writes that overlap it.
    longest: u64,
    /// The number the next write gets.
    next: u64,
    /// Why a write failed: every call from then on fails.
    failed: Option<(io::ErrorKind, String)>,
    /// Set once the backend closes: the thread ends when the queue is written, and a
    /// write from then on fails.
    closing: bool,
}

/// A queued write: its bytes are in `State::by_offset` under `(offset, seq)`.
#[derive(Debug, Clone, Copy)]
struct Write {
    offset: u64,
    seq: u64,
    len: usize,
}

impl State {
    fn check(&self) -> io::Result<()> {
        match &self.failed {
            None => Ok(()),
            Some((kind, message)) => Err(io::Error::new(
                *kind,
                format!("an earlier write failed: {message}"),
            )),
        }
    }
}

/// A storage backend over `file` that writes behind (see the module's documentation).
#[derive(Debug)]
pub(super) struct Behind {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Behind {
    pub(super) fn new(
        file: impl StorageBackend,
        writeback: Option<std::fs::File>,
    ) -> io::Result<Behind> {
        let shared = Arc::new(Shared {
            file: Box::new(file),
            writeback,
            wakes: AtomicUsize::new(0),
            writebacks: AtomicUsize::new(0),
            queued: AtomicUsize::new(0),
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            progress: Condvar::new(),
        });
        let thread = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("embedded-writes".into())
                .spawn(move || shared.write_queued())?
        };
        Ok(Behind {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }

    /// Waits until every write made before this call is in the file (or one failed). Not
    /// until the queue is empty: writes another thread makes meanwhile need not hold it up.
    fn drained(&self) -> io::Result<MutexGuard<'_, State>> {
        let mut state = self.state();
        let made = state.next;
        while state.queue.front().is_some_and(|w| w.seq < made) && state.failed.is_none() {
            state = wait(&self.shared.progress, state);
        }
        state.check()?;
        Ok(state)
    }
}

/// A poisoned lock means a thread panicked while holding it; the state is a queue whose
/// every change is whole, so it is still right to use.
fn wait<'a>(condvar: &Condvar, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    condvar
        .wait(guard)
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The writes of one turn of the thread: up to this many bytes, so that the queue's memory
/// is freed as it goes.
const BATCH_BYTES: usize = 4 * 1024 * 1024;

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The thread: writes the queue's writes in order until the backend closes, with the
    /// writeback's thread beside it (see [`Shared::start_writebacks`]), which ends with it.
    fn write_queued(&self) {
        std::thread::scope(|scope| {
            let wake = self.start_writebacks(scope);
            self.write_in_order(wake.as_ref());
            // `wake` goes here, which ends the writeback's thread; the scope joins it.
        });
    }

    /// Starts the thread that starts the file's writeback each time it is woken, if the
    /// store handed the file to do it through, and returns what wakes it: a wake while one
    /// is pending is dropped, as the call it asks for is the same.
    ///
    /// Why a thread of its own: the call queues the pages' writes to the disk, and the
    /// block layer's writeback throttling put the caller to sleep several hundred times
    /// in 12 s of a load's last step; writes waited on it, and the store's writers, their
    /// queue full, on them.
    fn start_writebacks<'scope>(
        &'scope self,
        scope: &'scope std::thread::Scope<'scope, '_>,
    ) -> Option<std::sync::mpsc::SyncSender<()>> {
        let file = self.writeback.as_ref()?;
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let started = std::thread::Builder::new()
            .name("embedded-writeback".into())
            .spawn_scoped(scope, move || {
                while woken.recv().is_ok() {
                    match start_writeback(file) {
                        Ok(()) => {
                            self.writebacks.fetch_add(1, Ordering::Relaxed);
                        }
                        // A hint: the kernel writes the pages back on its own, as it would.
                        Err(e) => tracing::debug!(error = %e, "could not start the writeback"),
                    }
                }
            });
        match started {
            Ok(_) => Some(wake),
            // The same: the kernel writes the pages back on its own.
            Err(e) => {
                tracing::debug!(error = %e, "could not start the writeback's thread");
                None
            }
        }
    }

    /// Writes the queue's writes in order until the backend closes, waking `writeback`
    /// each time it has written [`WRITEBACK_BYTES`].
    fn write_in_order(&self, writeback: Option<&std::sync::mpsc::SyncSender<()>>) {
        /// Should the thread end before the backend closes (a panic), or with writes
        /// queued, every call from then on fails, instead of waiting for writes no one will
        /// make.
        struct Ended<'a>(&'a Shared);
        impl Drop for Ended<'_> {
            fn drop(&mut self) {
                let mut state = self.0.lock();
                if (!state.closing || !state.queue.is_empty()) && state.failed.is_none() {
                    state.failed = Some((io::ErrorKind::Other, "the write thread ended".into()));
                }
                self.0.progress.notify_all();
            }
        }
        let _ended = Ended(self);
        let mut unsent = 0;
        let mut state = self.lock();
        loop {
            while state.queue.is_empty() && !state.closing {
                state = wait(&self.work, state);
            }
            if state.queue.is_empty() || state.failed.is_some() {
                return;
            }
            let mut bytes = 0;
            let batch: Vec<(Write, Arc<[u8]>)> = state
                .queue
                .iter()
                .take_while(|w| {
                    let take = bytes < BATCH_BYTES;
                    bytes += w.len;
                    take
                })
                .map(|w| (*w, Arc::clone(&state.by_offset[&(w.offset, w.seq)])))
                .collect();
            drop(state);
            let written = batch
                .iter()
                .try_for_each(|(w, data)| self.file.write(w.offset, data));
            unsent += batch.iter().map(|(w, _)| w.len).sum::<usize>();
            state = self.lock();
            match written {
                Ok(()) => {
                    for (w, _) in &batch {
                        state.queue.pop_front();
                        state.by_offset.remove(&(w.offset, w.seq));
                        state.bytes -= w.len;
                    }
                    self.queued.store(state.queue.len(), Ordering::Release);
                    if state.queue.is_empty() {
                        state.longest = 0;
                    }
                }
                // The writes stay queued, so that reads still see them; no call succeeds
                // from now on.
                Err(e) => state.failed = Some((e.kind(), e.to_string())),
            }
            self.progress.notify_all();
            if unsent >= WRITEBACK_BYTES && state.failed.is_none() {
                unsent = 0;
                if let Some(writeback) = writeback {
                    self.wakes.fetch_add(1, Ordering::Relaxed);
                    let _ = writeback.try_send(());
                }
            }
        }
    }
}

/// The bytes written after which the write thread wakes the writeback's thread, which asks
/// the kernel to start writing the file's dirty pages to the disk (RocksDB's
/// `bytes_per_sync`; at most this often, as wakes coalesce).
///
/// Why: the kernel starts on its own only past a tenth of memory (or after 30 s), so a bulk
/// load's writes piled up in the page cache, and each of redb's syncs (as it grows the file,
/// and at the last commit) stopped the load for seconds while the disk wrote them all, idle
/// in between: at 1,000,000 issues about 15 s of a 58 s load were such stalls. Spill files
/// are left to the kernel: started the same way, they went to the disk whole, where half of
/// them are deleted before the kernel would have written them, and the load was slower.
const WRITEBACK_BYTES: usize = 8 * 1024 * 1024;

/// Starts writing `file`'s dirty pages to the disk, without waiting for them to be written
/// (though the call may sleep in the block layer's writeback throttling as it queues them,
/// hence its thread of its own). Linux only: elsewhere the store hands the thread no file to
/// do it through.
#[cfg(target_os = "linux")]
fn start_writeback(file: &std::fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: no pointer is passed, and the descriptor is that of a `File` the caller
    // borrows, so it stays open for the call; the call only starts the writeback of the
    // file's dirty pages (the range 0..0 is the whole file).
    let started =
        unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    if started == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &std::fs::File) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

impl StorageBackend for Behind {
    fn len(&self) -> io::Result<u64> {
        // Every write is within the length: redb sets a larger length before it writes past
        // the end, and `set_len` waits for the queue.
        self.state().check()?;
        self.shared.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let end = offset + out.len() as u64;
        // No write queued: then every write redb made before this read is in the file. redb
        // orders a page's write before any read of it (under the write buffer's stripe
        // lock), and the count falls to 0 only after the write it counted reached the file.
        // A failed write stays queued, so a read after one takes the lock and fails.
        if self.shared.queued.load(Ordering::Acquire) == 0 {
            return self.shared.file.read(offset, out);
        }
        // The queued writes that overlap the read, taken before the file is read: one that is
        // no longer queued was in the file before the read began.
        let overlapping: Vec<(u64, u64, Arc<[u8]>)> = {
            let state = self.state();
            state.check()?;
            if state.queue.is_empty() {
                Vec::new()
            } else {
                let from = offset.saturating_sub(state.longest.saturating_sub(1));
                let mut found: Vec<(u64, u64, Arc<[u8]>)> = state
                    .by_offset
                    .range((from, 0)..(end, 0))
                    .filter(|((o, _), data)| o + data.len() as u64 > offset)
                    .map(|(&(o, seq), data)| (seq, o, Arc::clone(data)))
                    .collect();
                found.sort_unstable_by_key(|&(seq, _, _)| seq);
                found
            }
        };
        self.shared.file.read(offset, out)?;
        for (_, at, data) in overlapping {
            let from = offset.max(at);
            let to = end.min(at + data.len() as u64);
            out[(from - offset) as usize..(to - offset) as usize]
                .copy_from_slice(&data[(from - at) as usize..(to - at) as usize]);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        // A shorter file must not lose a queued write to the cut, nor have one extend it
        // again, so the writes made before go first. A longer one leaves every queued write
        // where it was: redb grows the file under its allocator's lock, and waiting for the
        // queue there made both writers wait for it.
        if len < self.shared.file.len()? {
            let _drained = self.drained()?;
            self.shared.file.set_len(len)
        } else {
            self.state().check()?;
            self.shared.file.set_len(len)
        }
    }

    fn sync_data(&self) -> io::Result<()> {
        // The queue is written before the sync, but not under the lock, so that writes made
        // meanwhile (none during a commit's sync) queue as usual.
        drop(self.drained()?);
        self.shared.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let data: Arc<[u8]> = Arc::from(data);
        let mut state = self.state();
        while state.bytes >= QUEUE_BYTES && state.failed.is_none() {
            state = wait(&self.shared.progress, state);
        }
        state.check()?;
        if state.closing {
            return Err(io::Error::other("a write after the file was closed"));
        }
        let seq = state.next;
        state.next += 1;
        let was_empty = state.queue.is_empty();
        state.queue.push_back(Write {
            offset,
            seq,
            len: data.len(),
        });
        state.bytes += data.len();
        state.longest = state.longest.max(data.len() as u64);
        state.by_offset.insert((offset, seq), data);
        self.shared
            .queued
            .store(state.queue.len(), Ordering::Release);
        if was_empty {
            self.shared.work.notify_one();
        }
        Ok(())
    }

    fn close(&self) -> io::Result<()> {
        let drained = self.drained().map(drop);
        self.stop();
        // The file's locks are released whatever happened to the writes.
        let closed = self.shared.file.close();
        drained.and(closed)
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.state().check()?;
        self.shared.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.state().check()?;
        self.shared.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.state().check()?;
        self.shared.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.state().check()?;
        self.shared.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        // What was written under the lock is in the file before another process may take
        // it; the lock is released even after a failed write.
        let _written = self.drained();
        self.shared.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.state().check()?;
        self.shared.file.query_lock_range(start, end)
    }
}

impl Behind {
    /// Ends the thread (once the queue is written, or a write failed).
    fn stop(&self) {
        self.state().closing = true;
        self.shared.work.notify_all();
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // The thread's end already failed the backend (`Ended`); this says why.
            if thread.join().is_err() {
                tracing::error!("the embedded store's write thread (or its writeback's) panicked");
            }
        }
    }
}

impl Drop for Behind {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::thread::JoinHandle;

    use proptest::prelude::*;

    use super::*;

    /// A page of the proptest's file: it is a few pages long, its writes up to 3.
    const PAGE: usize = 64;

    /// A file in memory whose writes can be held back (so that writes stay queued for as
    /// long as a test wants) or made to fail.
    #[derive(Debug, Default)]
    struct Memory {
        bytes: Mutex<Vec<u8>>,
        held: Mutex<bool>,
        released: Condvar,
        fail_writes: AtomicBool,
    }

    #[derive(Debug, Clone)]
    struct Shared(Arc<Memory>);

    impl Memory {
        fn hold(&self, held: bool) {
            *self.held.lock().unwrap() = held;
            self.released.notify_all();
        }
    }

    impl StorageBackend for Shared {
        fn len(&self) -> io::Result<u64> {
            Ok(self.0.bytes.lock().unwrap().len() as u64)
        }

        fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
            let bytes = self.0.bytes.lock().unwrap();
            let range = offset as usize..offset as usize + out.len();
            let from = bytes
                .get(range)
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"))?;
            out.copy_from_slice(from);
            Ok(())
        }

        fn set_len(&self, len: u64) -> io::Result<()> {
            self.0.bytes.lock().unwrap().resize(len as usize, 0);
            Ok(())
        }

        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }

        fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
            let mut held = self.0.held.lock().unwrap();
            while *held {
                held = self.0.released.wait(held).unwrap();
            }
            drop(held);
            if self.0.fail_writes.load(Ordering::SeqCst) {
                return Err(io::Error::other("the disk is full"));
            }
            let mut bytes = self.0.bytes.lock().unwrap();
            let range = offset as usize..offset as usize + data.len();
            bytes
                .get_mut(range)
                .ok_or_else(|| io::Error::other("a write past the end"))?
                .copy_from_slice(data);
            Ok(())
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        /// `len` bytes from byte `at` (within the file), each `fill`.
        Write {
            at: usize,
            len: usize,
            fill: u8,
        },
        Read {
            at: usize,
            len: usize,
        },
        SetLen {
            len: usize,
        },
        Sync,
        /// Holds the file's writes back, or lets them go.
        Hold(bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // Byte-granular, as redb's header reads and writes are, so that an overlap found
            // or copied one byte off shows.
            6 => (0..16 * PAGE, 1..3 * PAGE, any::<u8>())
                .prop_map(|(at, len, fill)| Op::Write { at, len, fill }),
            4 => (0..16 * PAGE, 1..3 * PAGE).prop_map(|(at, len)| Op::Read { at, len }),
            1 => (1..20 * PAGE).prop_map(|len| Op::SetLen { len }),
            1 => Just(Op::Sync),
            2 => any::<bool>().prop_map(Op::Hold),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Whatever is queued, held back or written, every read and the file once synced are
        /// what a plain file would hold after the same calls.
        #[test]
        fn reads_and_the_synced_file_are_a_plain_files(ops in prop::collection::vec(op(), 1..60)) {
            let memory = Arc::new(Memory::default());
            let behind = Behind::new(Shared(Arc::clone(&memory)), None).unwrap();
            let mut model: Vec<u8> = vec![0; 8 * PAGE];
            behind.set_len(model.len() as u64).unwrap();
            for op in ops {
                match op {
                    Op::Write { at, len, fill } => {
                        // redb writes only within the file, as a plain file would take them.
                        let (from, to) = (at, at + len);
                        if to <= model.len() {
                            model[from..to].fill(fill);
                            behind.write(from as u64, &vec![fill; to - from]).unwrap();
                        }
                    }
                    Op::Read { at, len } => {
                        let (from, to) = (at, at + len);
                        let mut out = vec![0xAA; to - from];
                        let read = behind.read(from as u64, &mut out);
                        match model.get(from..to) {
                            Some(expected) => {
                                read.unwrap();
                                prop_assert_eq!(&out[..], expected);
                            }
                            None => prop_assert!(read.is_err()),
                        }
                    }
                    Op::SetLen { len } => {
                        memory.hold(false);
                        model.resize(len, 0);
                        behind.set_len(model.len() as u64).unwrap();
                    }
                    Op::Sync => {
                        memory.hold(false);
                        behind.sync_data().unwrap();
                        prop_assert_eq!(&*memory.bytes.lock().unwrap(), &model);
                    }
                    Op::Hold(held) => memory.hold(held),
                }
                prop_assert_eq!(behind.len().unwrap(), memory.bytes.lock().unwrap().len() as u64);
            }
            memory.hold(false);
            behind.close().unwrap();
            prop_assert_eq!(&*memory.bytes.lock().unwrap(), &model);
        }
    }

    /// Pages of the queue-filling tests: more of them than the queue holds.
    const BIG_PAGE: usize = 64 * 1024;
    const BIG_PAGES: usize = QUEUE_BYTES / BIG_PAGE + 8;

    /// A backend over a held-back file, and a thread writing page `i` filled with `i` for
    /// every `i` in `0..BIG_PAGES`, once the queue is full (the thread waits for room).
    fn queue_filled() -> (Arc<Memory>, Arc<Behind>, JoinHandle<io::Result<()>>) {
        let memory = Arc::new(Memory::default());
        let behind = Arc::new(Behind::new(Shared(Arc::clone(&memory)), None).unwrap());
        behind.set_len((BIG_PAGES * BIG_PAGE) as u64).unwrap();
        memory.hold(true);
        let writer = {
            let behind = Arc::clone(&behind);
            std::thread::spawn(move || {
                (0..BIG_PAGES)
                    .try_for_each(|i| behind.write((i * BIG_PAGE) as u64, &vec![i as u8; BIG_PAGE]))
            })
        };
        while behind.state().bytes < QUEUE_BYTES {
            std::thread::yield_now();
        }
        (memory, behind, writer)
    }

    /// A writer that gets ahead of the file by more than the queue holds waits for it, and
    /// nothing it wrote is lost.
    #[test]
    fn a_full_queue_waits_for_the_file() {
        let (memory, behind, writer) = queue_filled();
        // The queue never holds more than its bound and a page past it.
        assert!(!writer.is_finished());
        assert!(behind.state().bytes <= QUEUE_BYTES + BIG_PAGE);
        memory.hold(false);
        writer.join().unwrap().unwrap();
        behind.sync_data().unwrap();
        let bytes = memory.bytes.lock().unwrap();
        for i in 0..BIG_PAGES {
            assert!(bytes[i * BIG_PAGE..(i + 1) * BIG_PAGE]
                .iter()
                .all(|&b| b == i as u8));
        }
    }

    /// Over a file, the thread asks for the file's writeback each time it has written about
    /// [`WRITEBACK_BYTES`] (past it by at most a turn's batch, [`BATCH_BYTES`] here, as the
    /// writes are of a size that divides it; a write larger than the rest of a batch goes
    /// past it by more); the writeback's thread, joined at the close, has started it at
    /// least once and at most once per ask by then (when, it does not say: the starts are
    /// its own), counting only starts the kernel took; and the file holds what was written.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_starts_the_files_writeback_as_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.path().join("file"))
            .unwrap();
        let writeback = file.try_clone().unwrap();
        let backend = redb::backends::FileBackend::new(file).unwrap();
        let behind = Behind::new(backend, Some(writeback)).unwrap();
        let chunk = 1 << 20;
        let total = 6 * WRITEBACK_BYTES;
        behind.set_len(total as u64).unwrap();
        for (i, at) in (0..total).step_by(chunk).enumerate() {
            behind.write(at as u64, &vec![i as u8; chunk]).unwrap();
        }
        behind.sync_data().unwrap();
        let asked = behind.shared.wakes.load(Ordering::Relaxed);
        assert!(
            (total / (WRITEBACK_BYTES + BATCH_BYTES)..=total / WRITEBACK_BYTES).contains(&asked),
            "{asked}"
        );
        let mut out = vec![0; chunk];
        behind.read(2 * chunk as u64, &mut out).unwrap();
        assert!(out.iter().all(|&b| b == 2));
        behind.close().unwrap();
        let started = behind.shared.writebacks.load(Ordering::Relaxed);
        assert!((1..=asked).contains(&started), "{started} of {asked}");
    }

    /// A write that fails fails every call after it, the sync included, so no commit
    /// succeeds over a page that is not in the file.
    #[test]
    fn a_failed_write_fails_every_later_call() {
        let memory = Arc::new(Memory::default());
        let behind = Behind::new(Shared(Arc::clone(&memory)), None).unwrap();
        behind.set_len(4 * PAGE as u64).unwrap();
        memory.fail_writes.store(true, Ordering::SeqCst);
        behind.write(0, &[1; PAGE]).unwrap();
        let error = behind.sync_data().unwrap_err();
        assert!(error.to_string().contains("the disk is full"), "{error}");
        assert!(behind.write(PAGE as u64, &[2; PAGE]).is_err());
        assert!(behind.read(0, &mut [0; PAGE]).is_err());
        assert!(behind.set_len(8 * PAGE as u64).is_err());
        assert!(behind.close().is_err());
    }

    /// A write that fails while a writer waits for room wakes it with the failure, instead of
    /// leaving it to wait for room that never comes.
    #[test]
    fn a_failed_write_wakes_a_writer_waiting_for_room() {
        let (memory, behind, writer) = queue_filled();
        memory.fail_writes.store(true, Ordering::SeqCst);
        memory.hold(false);
        let error = writer.join().unwrap().unwrap_err();
        assert!(error.to_string().contains("the disk is full"), "{error}");
        assert!(behind.sync_data().is_err());
    }
}

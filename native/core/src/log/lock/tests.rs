//! The lock rule of docs/FORMAT.md, "Lock", against real files: lines written as other owners would
//! have written them, judged by a native opener.

use super::*;
use crate::log::storage::RealStorage;
use crate::log::tests::TempDir;

/// A fresh directory that exists.
fn directory() -> TempDir {
    let dir = TempDir::new();
    fs::create_dir_all(&dir.0).expect("create");
    dir
}

fn acquire(dir: &Path) -> Result<DirLock, LogError> {
    DirLock::acquire(&RealStorage, dir, 7)
}

/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The line another owner would have written: this process's identity with `change` applied.
fn line_of(engine: &str, change: impl FnOnce(&mut Identity)) -> String {
    let mut identity = Identity::of_this_process();
    change(&mut identity);
    identity.line(1).replace("\"native\"", &format!("\"{engine}\""))
}

fn reason(result: Result<DirLock, LogError>) -> (Option<u32>, String) {
    match result {
        Err(LogError::Locked { pid, reason, .. }) => (pid, reason),
        other => panic!("expected LOG_LOCKED, got {other:?}"),
    }
}

fn assert_taken(dir: &Path) {
    let lock = acquire(dir).expect("the stale lock is taken");
    let line = fs::read_to_string(dir.join(LOCK_FILE)).expect("read");
    assert_eq!(
        Owner::parse(line.as_bytes()).identity,
        Identity::of_this_process()
    );
    assert!(line.contains("\"createdMs\":7"), "{line}");
    lock.release(&RealStorage).expect("release");
    assert!(listing(dir).is_empty(), "{:?}", listing(dir));
}

#[test]
fn reads_back_the_line_it_writes_and_survives_damaged_ones() {
    let me = Identity::of_this_process();
    let owner = Owner::parse(me.line(5).as_bytes());
    assert_eq!(owner.identity, me);
    assert!(owner.native);
    assert!(me.boot_id.is_some() && me.pid_namespace.is_some() && me.start_time.is_some());
    let old = Owner::parse(b"{\"engine\":\"js\", \"pid\" : 7}");
    assert_eq!((old.pid, old.native), (Some(7), false));
    assert_eq!(old.identity.boot_id, None);
    assert_eq!(Owner::parse(b"").pid, None);
    assert_eq!(Owner::parse(b"{\"pid\":\"x\"}").pid, None);
    assert_eq!(Owner::parse(b"{\"pid\":0}").pid, None);
    assert_eq!(
        Owner::parse(b"{\"pid\":1,\"bootId\":\"a\\\"b\"}")
            .identity
            .boot_id,
        None
    );
}

#[test]
fn a_second_open_in_this_process_is_refused_by_the_os_lock_until_released() {
    let dir = directory();
    let first = acquire(&dir.0).expect("first");
    let (pid, why) = reason(acquire(&dir.0));
    assert_eq!(pid, Some(std::process::id()));
    assert!(why.contains("flock"), "{why}");
    first.release(&RealStorage).expect("release");
    assert!(listing(&dir.0).is_empty());
    drop(acquire(&dir.0).expect("after release"));
    // Dropped without release: LOCK stays, as after a crash, and is taken.
    assert_eq!(listing(&dir.0), vec![LOCK_FILE.to_string()]);
    assert_taken(&dir.0);
}

#[test]
fn a_line_with_this_pid_left_by_an_earlier_program_is_stale() {
    for engine in ["native", "js"] {
        let dir = directory();
        fs::write(dir.0.join(LOCK_FILE), line_of(engine, |_| {})).expect("write");
        assert_taken(&dir.0);
    }
}

#[test]
fn a_js_line_with_this_pid_is_live_while_this_process_holds_lock_open() {
    let dir = directory();
    fs::write(dir.0.join(LOCK_FILE), line_of("js", |_| {})).expect("write");
    let held = File::open(dir.0.join(LOCK_FILE)).expect("open");
    let (pid, why) = reason(acquire(&dir.0));
    assert_eq!(
        (pid, why.as_str()),
        (Some(std::process::id()), "this process holds it")
    );
    drop(held);
    assert_taken(&dir.0);
}

#[test]
fn a_reused_pid_is_stale_and_the_recorded_start_time_is_live() {
    let dir = directory();
    let init = start_time("1").expect("pid 1 has a start time");
    let js_init = |start| line_of("js", |me| (me.pid, me.start_time) = (1, Some(start)));
    fs::write(dir.0.join(LOCK_FILE), js_init(init + 1)).expect("write");
    assert_taken(&dir.0);
    fs::write(dir.0.join(LOCK_FILE), js_init(init)).expect("write");
    let (pid, why) = reason(acquire(&dir.0));
    assert_eq!(pid, Some(1));
    assert!(why.contains("started when the lock says"), "{why}");
    // A native line is judged by its flock alone: process 1 holds none here.
    fs::write(
        dir.0.join(LOCK_FILE),
        js_init(init).replace("\"js\"", "\"native\""),
    )
    .expect("write");
    assert_taken(&dir.0);
}

#[test]
fn a_line_from_another_boot_is_stale() {
    let dir = directory();
    let line = line_of("js", |me| (me.pid, me.boot_id) = (1, Some("another-boot".into())));
    fs::write(dir.0.join(LOCK_FILE), line).expect("write");
    assert_taken(&dir.0);
}

#[test]
fn an_owner_in_another_pid_namespace_is_judged_by_its_heartbeat() {
    let dir = directory();
    let path = dir.0.join(LOCK_FILE);
    let line = line_of("js", |me| {
        (me.pid, me.pid_namespace) = (1, Some("pid:[1]".into()))
    });
    // Untouched for longer than the stale period: taken at once.
    fs::write(&path, &line).expect("write");
    let file = File::options().write(true).open(&path).expect("open");
    file.set_modified(SystemTime::now() - TIMING.stale * 2)
        .expect("backdate");
    assert_taken(&dir.0);

    // Fresh but untouched while watched: stale once the (shortened) period has passed.
    let short = Timing {
        heartbeat: Duration::from_millis(20),
        stale: Duration::from_millis(300),
    };
    fs::write(&path, &line).expect("write");
    let lock = acquire_with(&RealStorage, &dir.0, 7, short).expect("taken after watching");
    lock.release(&RealStorage).expect("release");

    // Touched while watched: live.
    fs::write(&path, &line).expect("write");
    let file = File::options().write(true).open(&path).expect("open");
    let (stop, stopped) = mpsc::channel::<()>();
    let toucher = thread::spawn(move || {
        let mut at = SystemTime::now();
        while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(Duration::from_millis(10)) {
            at += Duration::from_millis(1);
            file.set_modified(at).expect("touch");
        }
    });
    let patient = Timing {
        heartbeat: Duration::from_millis(20),
        stale: Duration::from_secs(60),
    };
    let (pid, why) = reason(acquire_with(&RealStorage, &dir.0, 7, patient));
    drop(stop);
    toucher.join().expect("toucher");
    assert_eq!(pid, Some(1));
    assert!(why.contains("another PID namespace"), "{why}");
}

#[test]
fn a_holder_touches_its_lock() {
    let dir = directory();
    let fast = Timing {
        heartbeat: Duration::from_millis(10),
        stale: TIMING.stale,
    };
    let lock = acquire_with(&RealStorage, &dir.0, 7, fast).expect("acquire");
    let path = dir.0.join(LOCK_FILE);
    let old = SystemTime::now() - Duration::from_secs(3600);
    File::options()
        .write(true)
        .open(&path)
        .expect("open")
        .set_modified(old)
        .expect("backdate");
    let moved = (0..1000).any(|_| {
        thread::sleep(Duration::from_millis(10));
        fs::metadata(&path).and_then(|m| m.modified()).expect("mtime") != old
    });
    assert!(moved, "the heartbeat never touched LOCK");
    lock.release(&RealStorage).expect("release");
}

#[test]
fn removing_a_stale_lock_puts_back_one_that_replaced_it() {
    let dir = directory();
    let path = dir.0.join(LOCK_FILE);
    fs::write(&path, "stale").expect("write");
    let judged = File::open(&path).expect("open");
    // Another opener removes the stale lock and publishes its own before this one removes it.
    fs::remove_file(&path).expect("remove");
    fs::write(&path, "fresh").expect("write");
    remove_stale(&RealStorage, &dir.0, &path, &judged).expect("remove stale");
    assert_eq!(fs::read_to_string(&path).expect("read"), "fresh");
    assert_eq!(listing(&dir.0), vec![LOCK_FILE.to_string()]);
    // And the judged one itself goes.
    let judged = File::open(&path).expect("open");
    remove_stale(&RealStorage, &dir.0, &path, &judged).expect("remove stale");
    assert!(listing(&dir.0).is_empty());
}

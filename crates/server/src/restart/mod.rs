//! Warm restart: memcached 1.6's restartable cache (`-e FILE`), as a snapshot file.
//!
//! A graceful stop (SIGUSR1, or `shutdown graceful` with `-A`) saves every live item, once every
//! worker and the maintenance thread have stopped ([`save`]); the next start with the same `-e` loads
//! them back, with their flags, remaining TTL, CAS and meta marks, before the listener accepts a
//! connection ([`restore`]), and `stats` says how many (`restart_items_*`).
//!
//! memcached instead maps its whole item memory onto the file and writes a `.meta` file at a graceful
//! stop; mrcached writes the snapshot at that moment. Either way only a graceful stop keeps the cache: a
//! crash, SIGKILL, SIGTERM, SIGINT or plain `shutdown` loses it, and the next start is cold. The
//! snapshot costs a write of the live items at stop and a read at start, and needs no tmpfs or DAX
//! mount; the item memory stays ordinary memory.
//!
//! Invariants:
//! - The file on disk is always whole: it is written to `FILE.tmp`, flushed to disk and renamed over
//!   `FILE`; a failed save leaves no `FILE.tmp` and no half file.
//! - A file is used only if it is whole and was written under the same settings ([`MUST_MATCH`]): the
//!   first pass reads it through and checks the settings, lengths, item count and CRC; only then does
//!   the second pass store a single item. A file that fails is renamed aside (`FILE.bad-UNIXTIME`), never
//!   deleted, and the server starts cold with a message on stderr; nothing else is touched.
//! - A file that was loaded is deleted, as memcached deletes its `.meta`: a crash after a restart must
//!   not bring back items deleted or replaced since.
//! - Tenants are matched by name: an item keeps its tenant's namespace (and so its pool), and an item
//!   of a tenant no longer configured is dropped and counted.
//! - Saving walks the engine shard by shard, at most [`WALK_CHUNKS_PER_HOLD`] chunks per lock hold
//!   (`Engine::walk_live_items`); memory is one buffered writer, never the whole cache.

pub mod format;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, BufReader, BufWriter};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use mrcache_engine::{Clock, ItemCursor, ItemMarks, Key, RestoreOutcome, SavedItem, TenantId};

use crate::context::ServerContext;
use crate::settings::Settings;
use crate::tenants::DEFAULT_TENANT_NAME;
use format::{FormatError, Header, Reader, Record, Writer};

/// Chunks one walk step inspects under a shard lock while saving. Saving runs after the workers have
/// stopped, so a hold delays only the admin port's `/metrics`; the bound keeps even that short.
pub const WALK_CHUNKS_PER_HOLD: usize = 1024;
/// Buffer of the file's reader and writer.
const IO_BUFFER_BYTES: usize = 1 << 20;

/// The settings a file must have been written under (`--print-config` names): they decide the slab
/// classes, how items are placed in them, and what a CAS means. memcached checks the same (`maxbytes`,
/// `item_size_max`, `chunk_size`, `slab_config`, `use_cas`).
pub const MUST_MATCH: [&str; 6] = [
    "memory_limit_bytes",
    "item_size_max_bytes",
    "min_chunk_data_bytes",
    "growth_factor",
    "item_accounting",
    "use_cas",
];

/// What the load at start-up did (`stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreReport {
    /// Items stored back.
    pub restored: u64,
    /// Items whose TTL ran out while the server was down.
    pub expired: u64,
    /// Items of tenants no longer configured.
    pub tenant_dropped: u64,
    /// Items that did not fit: larger than `-I`, or no memory.
    pub unstored: u64,
}

/// Why a file was not used.
#[derive(Debug, thiserror::Error)]
pub enum RestartError {
    /// Saved under other settings.
    #[error("saved with {setting} {saved}, started with {now}")]
    Mismatch {
        /// The setting's `--print-config` name.
        setting: &'static str,
        /// Its value in the file.
        saved: String,
        /// Its value now.
        now: String,
    },
    /// The file is not a readable warm-restart file.
    #[error(transparent)]
    Format(#[from] FormatError),
}

/// The [`MUST_MATCH`] settings as the file's header records them.
pub fn fingerprint(settings: &Settings) -> Vec<(String, String)> {
    settings
        .describe()
        .into_iter()
        .filter(|(name, _)| MUST_MATCH.contains(name))
        .map(|(name, value)| (name.to_string(), value))
        .collect()
}

/// Refuses a header written under settings other than `settings`.
pub fn check_compatible(header: &Header, settings: &Settings) -> Result<(), RestartError> {
    for (name, now) in fingerprint(settings) {
        let saved = header.setting(&name);
        if saved != Some(now.as_str()) {
            let setting = MUST_MATCH
                .into_iter()
                .find(|n| *n == name)
                .expect("fingerprint names only MUST_MATCH settings");
            return Err(RestartError::Mismatch {
                setting,
                saved: saved.unwrap_or("(none)").to_string(),
                now,
            });
        }
    }
    Ok(())
}

/// Checks at start-up that `-e FILE` can be written at the stop: its directory exists and
/// `FILE.tmp` can be created there (and is removed again).
pub fn check_path(path: &Path) -> io::Result<()> {
    if path.is_dir() {
        return Err(io::Error::other(format!(
            "-e {}: is a directory",
            path.display()
        )));
    }
    let tmp = temp_path(path);
    File::create(&tmp)
        .and_then(|_| std::fs::remove_file(&tmp))
        .map_err(|e| io::Error::new(e.kind(), format!("-e {}: {e}", tmp.display())))
}

/// Saves every live item to `path` (through `path.tmp`, renamed when whole and on disk). Returns the
/// items saved. Call it once the workers have stopped, so that the file is one moment of the cache.
pub fn save(ctx: &ServerContext, path: &Path) -> io::Result<u64> {
    let tmp = temp_path(path);
    let result = write_snapshot(ctx, &tmp).and_then(|items| {
        std::fs::rename(&tmp, path)?;
        // The rename is durable once the directory is; a failure here loses nothing already written.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(items)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn write_snapshot(ctx: &ServerContext, tmp: &Path) -> io::Result<u64> {
    let clock = ctx.clock();
    let mut settings = fingerprint(&ctx.settings);
    settings.push(("saved_unix".to_string(), unix_now().to_string()));
    let header = Header {
        settings,
        tenants: ctx
            .tenants
            .known()
            .into_iter()
            .map(|(id, name)| (id.0, name))
            .collect(),
    };
    let file = File::create(tmp)?;
    let mut writer = Writer::new(BufWriter::with_capacity(IO_BUFFER_BYTES, file), &header)?;
    let mut cursor = ItemCursor::default();
    let mut failed: Option<io::Error> = None;
    while !cursor.is_done() && failed.is_none() {
        ctx.engine
            .walk_live_items(&mut cursor, WALK_CHUNKS_PER_HOLD, clock, |item| {
                if failed.is_none() {
                    if let Err(e) = writer.item(&record_of(item, clock)) {
                        failed = Some(e);
                    }
                }
            });
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let items = writer.items();
    let file = writer.finish()?.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    Ok(items)
}

/// An engine item as the file carries it: times as Unix times.
fn record_of<'a>(item: &SavedItem<'a>, clock: Clock) -> Record<'a> {
    Record {
        tenant: item.key.tenant.0,
        key: item.key.bytes,
        value: item.value,
        client_flags: item.client_flags,
        expiry_unix: match item.expiry {
            0 => 0,
            e => clock.unix_time(e),
        },
        atime_unix: clock.unix_time(item.atime),
        cas: item.cas,
        marks: item.marks.bits(),
    }
}

/// Loads the cache `path` holds, if any, into the engine, and reports it on stderr; never fails: a
/// missing file is a cold start (said with `-v`), an unusable one is renamed aside and is a cold start.
/// Run before the listener accepts connections.
pub fn restore(ctx: &ServerContext, path: &Path) -> RestoreReport {
    let verbose = ctx.settings.verbose > 0;
    let open = || File::open(path);
    let file = match open() {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if verbose {
                eprintln!(
                    "mrcached: warm restart: no saved cache at {}, starting with a clean cache",
                    path.display()
                );
            }
            return RestoreReport::default();
        }
        Err(e) => {
            eprintln!(
                "mrcached: warm restart: cannot open {}: {e}; starting with a clean cache",
                path.display()
            );
            return RestoreReport::default();
        }
    };
    // First pass: the whole file is checked before anything is stored.
    if let Err(e) = read_file(file, &ctx.settings, |_, _| {}) {
        refuse(path, &e);
        return RestoreReport::default();
    }
    let mut report = RestoreReport::default();
    let clock = ctx.clock();
    let mut ids: Option<Vec<Option<TenantId>>> = None;
    let loaded = open()
        .map_err(|e| RestartError::Format(e.into()))
        .and_then(|file| {
            read_file(file, &ctx.settings, |header, record| {
                let ids = ids.get_or_insert_with(|| tenant_ids(ctx, header));
                let Some(tenant) = ids.get(record.tenant as usize).copied().flatten() else {
                    report.tenant_dropped += 1;
                    return;
                };
                restore_record(ctx, tenant, record, clock, &mut report);
            })
        });
    match loaded {
        Ok(()) => {
            if let Err(e) = std::fs::remove_file(path) {
                eprintln!(
                    "mrcached: warm restart: cannot remove {} after loading it: {e}",
                    path.display()
                );
            }
            eprintln!(
                "mrcached: warm restart: restored {} items from {} ({} expired while down, {} of \
                 tenants no longer configured, {} did not fit)",
                report.restored,
                path.display(),
                report.expired,
                report.tenant_dropped,
                report.unstored
            );
        }
        // The file changed between the passes: what was stored stays, the file is set aside.
        Err(e) => refuse(path, &e),
    }
    report
}

/// Reads a file through, checking it against `settings`, and calls `f` on each item.
fn read_file(
    file: File,
    settings: &Settings,
    mut f: impl FnMut(&Header, &Record<'_>),
) -> Result<(), RestartError> {
    let (mut reader, header) = Reader::new(
        BufReader::with_capacity(IO_BUFFER_BYTES, file),
        settings.item_size_max_bytes,
    )?;
    check_compatible(&header, settings)?;
    while let Some(record) = reader.next()? {
        f(&header, &record);
    }
    reader.finish()?;
    Ok(())
}

/// The tenant each saved id stands for now, by name (`None`: no longer configured).
fn tenant_ids(ctx: &ServerContext, header: &Header) -> Vec<Option<TenantId>> {
    let table = ctx.tenants.current();
    let now = |name: &str| {
        if name == DEFAULT_TENANT_NAME {
            return Some(TenantId::DEFAULT);
        }
        table
            .tenants()
            .find(|(_, t)| t.name == name)
            .map(|(id, _)| id)
    };
    let len = header
        .tenants
        .iter()
        .map(|(id, _)| *id as usize + 1)
        .max()
        .unwrap_or(0);
    let mut ids = vec![None; len];
    for (id, name) in &header.tenants {
        ids[*id as usize] = now(name);
    }
    ids
}

fn restore_record(
    ctx: &ServerContext,
    tenant: TenantId,
    record: &Record<'_>,
    clock: Clock,
    report: &mut RestoreReport,
) {
    let item = SavedItem {
        key: Key::new(tenant, record.key),
        value: record.value,
        client_flags: record.client_flags,
        // An expiry now past reads as relative time 0, which would mean "never": 1 is past.
        expiry: match record.expiry_unix {
            0 => 0,
            unix => clock.relative(unix).max(1),
        },
        atime: clock.relative(record.atime_unix),
        cas: record.cas,
        marks: ItemMarks::from_bits(record.marks),
    };
    match ctx.engine.restore_item(&item, clock) {
        RestoreOutcome::Restored => report.restored += 1,
        RestoreOutcome::Expired => report.expired += 1,
        RestoreOutcome::TooLarge | RestoreOutcome::OutOfMemory => report.unstored += 1,
    }
}

/// Says why `path` is not used and renames it aside.
fn refuse(path: &Path, error: &RestartError) {
    let aside = with_suffix(path, &format!(".bad-{}", unix_now()));
    let kept = match std::fs::rename(path, &aside) {
        Ok(()) => format!("it was renamed to {}", aside.display()),
        Err(e) => format!("renaming it to {} failed: {e}", aside.display()),
    };
    eprintln!(
        "mrcached: warm restart: not using {}: {error}; {kept}; starting with a clean cache",
        path.display()
    );
}

fn temp_path(path: &Path) -> PathBuf {
    with_suffix(path, ".tmp")
}

/// `path` with `suffix` appended to its last component (`cache` → `cache.tmp`).
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

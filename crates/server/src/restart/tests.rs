//! The file format round-trips, and every damaged file is refused: cut anywhere, any byte changed,
//! or written under other settings.

use super::format::{FormatError, Header, Reader, Record, Writer};
use super::*;

fn header() -> Header {
    Header {
        settings: fingerprint(&Settings::default()),
        tenants: vec![(0, "default".into()), (3, "alice".into())],
    }
}

/// A record's fields, owned: tenant, key, value, flags, expiry, last access, CAS, marks.
type Fields = (u16, Vec<u8>, Vec<u8>, u32, i64, i64, u64, u8);

fn records() -> Vec<Fields> {
    (0..20u32)
        .map(|i| {
            (
                if i % 2 == 0 { 0 } else { 3 },
                format!("key{i}").into_bytes(),
                vec![b'v'; i as usize * 3],
                i,
                if i % 3 == 0 {
                    0
                } else {
                    1_800_000_000 + i as i64
                },
                1_700_000_000 + i as i64,
                u64::from(i) + 1,
                (i % 4) as u8,
            )
        })
        .collect()
}

/// The record `fields` describe, borrowing its key and value.
fn record(fields: &Fields) -> Record<'_> {
    let (tenant, key, value, client_flags, expiry_unix, atime_unix, cas, marks) = fields;
    Record {
        tenant: *tenant,
        key,
        value,
        client_flags: *client_flags,
        expiry_unix: *expiry_unix,
        atime_unix: *atime_unix,
        cas: *cas,
        marks: *marks,
    }
}

fn file() -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    for fields in records() {
        w.item(&record(&fields)).unwrap();
    }
    w.finish().unwrap()
}

/// Reads `bytes` through: the header and every item, or the first error.
fn read(bytes: &[u8]) -> Result<(Header, Vec<Vec<u8>>), FormatError> {
    let (mut r, h) = Reader::new(bytes, 1 << 20)?;
    let mut keys = Vec::new();
    while let Some(rec) = r.next()? {
        keys.push(rec.key.to_vec());
    }
    assert_eq!(r.finish()?, keys.len() as u64);
    Ok((h, keys))
}

#[test]
fn a_file_reads_back_as_written() {
    let bytes = file();
    let (mut r, h) = Reader::new(&bytes[..], 1 << 20).unwrap();
    assert_eq!(h, header());
    let mut n = 0;
    for fields in records() {
        let rec = r.next().unwrap().unwrap();
        assert_eq!(rec, record(&fields));
        n += 1;
    }
    assert!(r.next().unwrap().is_none());
    assert_eq!(r.finish().unwrap(), n);
}

#[test]
fn a_file_cut_anywhere_is_refused() {
    let bytes = file();
    for len in 0..bytes.len() {
        assert!(
            read(&bytes[..len]).is_err(),
            "cut at {len} of {}",
            bytes.len()
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(read(&longer).is_err(), "a byte after the trailer");
}

#[test]
fn any_changed_byte_is_refused() {
    let bytes = file();
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x40;
        assert!(read(&bad).is_err(), "byte {at} changed");
    }
}

#[test]
fn oversized_lengths_are_refused_before_allocating() {
    let mut w = Writer::new(Vec::new(), &header()).unwrap();
    w.item(&Record {
        tenant: 0,
        key: b"k",
        value: &[0u8; 2000],
        client_flags: 0,
        expiry_unix: 0,
        atime_unix: 0,
        cas: 1,
        marks: 0,
    })
    .unwrap();
    let bytes = w.finish().unwrap();
    let (mut r, _) = Reader::new(&bytes[..], 1000).unwrap();
    assert!(matches!(r.next(), Err(FormatError::Corrupt(_))));
}

#[test]
fn other_settings_are_refused_naming_the_setting() {
    let saved = header();
    assert!(check_compatible(&saved, &Settings::default()).is_ok());
    let run = |args: &[&str]| match Settings::parse_from(args).unwrap() {
        crate::settings::Command::Run(s) => s,
        other => panic!("{other:?}"),
    };
    for (args, setting) in [
        (&["mrcached", "-m", "128"][..], "memory_limit_bytes"),
        (&["mrcached", "-I", "2m"][..], "item_size_max_bytes"),
        (&["mrcached", "-n", "96"][..], "min_chunk_data_bytes"),
        (&["mrcached", "-f", "1.5"][..], "growth_factor"),
        (
            &["mrcached", "-o", "item_accounting=memcached"][..],
            "item_accounting",
        ),
        (&["mrcached", "-C"][..], "use_cas"),
    ] {
        match check_compatible(&saved, &run(args)) {
            Err(RestartError::Mismatch { setting: s, .. }) => assert_eq!(s, setting, "{args:?}"),
            other => panic!("{args:?}: {other:?}"),
        }
    }
    // Threads, shards and policies may change across a restart.
    assert!(check_compatible(
        &saved,
        &run(&[
            "mrcached",
            "-t",
            "8",
            "-o",
            "memory_layout=slab",
            "--slab-policy",
            "psa"
        ])
    )
    .is_ok());
}

#[test]
fn suffixes_keep_the_path() {
    assert_eq!(
        temp_path(Path::new("/a/b.cache")),
        Path::new("/a/b.cache.tmp")
    );
}

proptest::proptest! {
    /// Whatever follows a valid header, reading never panics and never allocates past the limits.
    #[test]
    fn any_bytes_after_a_header_read_without_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let mut bytes = Writer::new(Vec::new(), &header()).unwrap().finish().unwrap();
        bytes.truncate(bytes.len() - 13);
        bytes.extend_from_slice(&tail);
        let _ = read(&bytes);
    }

    /// Several bytes changed at once are still caught.
    #[test]
    fn changed_bytes_are_refused(changes in proptest::collection::vec((proptest::prelude::any::<usize>(), 1u8..=255), 1..8)) {
        let mut bytes = file();
        let len = bytes.len();
        for (at, xor) in changes {
            bytes[at % len] ^= xor;
        }
        // Changes may cancel out (the same byte twice); only a changed file must be refused.
        if bytes != file() {
            proptest::prop_assert!(read(&bytes).is_err());
        }
    }
}

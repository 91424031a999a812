use super::opcode::*;
use super::*;

fn req(op: u8, key: &[u8], extras: &[u8], value: &[u8], cas: u64, opaque: u32) -> Vec<u8> {
    let mut p = vec![REQUEST_MAGIC, op];
    p.extend_from_slice(&(key.len() as u16).to_be_bytes());
    p.push(extras.len() as u8);
    p.extend_from_slice(&[0, 0, 0]);
    p.extend_from_slice(&((key.len() + extras.len() + value.len()) as u32).to_be_bytes());
    p.extend_from_slice(&opaque.to_be_bytes());
    p.extend_from_slice(&cas.to_be_bytes());
    p.extend_from_slice(extras);
    p.extend_from_slice(key);
    p.extend_from_slice(value);
    p
}

fn one(input: &[u8]) -> Parsed<'_> {
    parse(input, &Limits::default(), false)
}

#[test]
fn set_with_flags_expiry_and_cas() {
    let mut extras = 5u32.to_be_bytes().to_vec();
    extras.extend_from_slice(&100u32.to_be_bytes());
    let p = req(SETQ, b"k", &extras, b"val", 42, 7);
    let Parsed::Request { packet, consumed } = one(&p) else {
        panic!("{:?}", one(&p))
    };
    assert_eq!(consumed, p.len());
    assert!(packet.quiet);
    assert_eq!(
        packet.header,
        Header {
            opcode: SETQ,
            opaque: 7,
            cas: 42
        }
    );
    assert_eq!(
        packet.command,
        Command::Store {
            kind: StoreKind::Set,
            key: b"k",
            flags: 5,
            exptime: 100,
            data: Data::Value(b"val")
        }
    );
    // Every prefix is incomplete and says how much it needs.
    for cut in 0..p.len() {
        assert!(matches!(one(&p[..cut]), Parsed::Incomplete { .. }), "{cut}");
    }
}

#[test]
fn too_large_is_reported_from_the_key_and_swallowed() {
    let limits = Limits {
        item_size_max: 1024,
        ..Limits::default()
    };
    let mut p = req(SET, b"big", &[0; 8], &[b'x'; 2000], 0, 0);
    p.truncate(HEADER_LEN + 8 + 3);
    assert_eq!(
        parse(&p, &limits, false),
        Parsed::Request {
            packet: Packet {
                header: Header {
                    opcode: SET,
                    opaque: 0,
                    cas: 0
                },
                quiet: false,
                command: Command::Store {
                    kind: StoreKind::Set,
                    key: b"big",
                    flags: 0,
                    exptime: 0,
                    data: Data::TooLarge { swallow: 2000 }
                }
            },
            consumed: p.len()
        }
    );
}

#[test]
fn memcached_errors() {
    // Wrong magic closes silently.
    assert_eq!(one(b"get k\r\n"), Parsed::Incomplete { needed: Some(24) });
    assert_eq!(one(b"get k\r\nget k\r\nget k\r\nget k\r\n"), Parsed::Close);
    // Key longer than the body: unknown command, close.
    let mut p = req(GET, b"k", &[], &[], 0, 1);
    p[8..12].copy_from_slice(&0u32.to_be_bytes());
    assert!(matches!(
        one(&p),
        Parsed::Error {
            status: Status::UnknownCommand,
            close: true,
            ..
        }
    ));
    // A get with extras, a 251-byte key: invalid arguments, close.
    for p in [
        req(GET, b"k", b"xxxx", &[], 0, 1),
        req(GET, &[b'a'; 251], &[], &[], 0, 1),
    ] {
        assert!(matches!(
            one(&p),
            Parsed::Error {
                status: Status::InvalidArguments,
                close: true,
                ..
            }
        ));
    }
    // Unknown opcodes (verbosity too) consume header, extras and key and swallow the body length.
    let p = req(VERBOSITY, b"ab", b"xy", b"v", 0, 1);
    assert_eq!(
        one(&p),
        Parsed::Error {
            header: Header {
                opcode: VERBOSITY,
                opaque: 1,
                cas: 0
            },
            status: Status::UnknownCommand,
            consumed: HEADER_LEN + 4,
            swallow: 5,
            close: false
        }
    );
}

#[test]
fn unauthenticated_connections_may_only_authenticate() {
    let get = req(GET, b"k", &[], &[], 0, 1);
    assert!(matches!(
        parse(&get, &Limits::default(), true),
        Parsed::Error {
            status: Status::AuthError,
            close: true,
            ..
        }
    ));
    let auth = req(SASL_AUTH, b"PLAIN", &[], b"\0u\0p", 0, 1);
    assert!(matches!(
        parse(&auth, &Limits::default(), true),
        Parsed::Request {
            packet: Packet {
                command: Command::SaslAuth {
                    step: false,
                    mechanism: b"PLAIN",
                    data: Data::Value(b"\0u\0p")
                },
                ..
            },
            ..
        }
    ));
    let version = req(VERSION, b"", &[], &[], 0, 1);
    assert!(matches!(
        parse(&version, &Limits::default(), true),
        Parsed::Request { .. }
    ));
}

#[test]
fn incr_gat_touch_flush_stat() {
    let mut extras = 3u64.to_be_bytes().to_vec();
    extras.extend_from_slice(&10u64.to_be_bytes());
    extras.extend_from_slice(&0xffff_ffffu32.to_be_bytes());
    let p = req(DECREMENTQ, b"n", &extras, &[], 0, 0);
    assert!(matches!(
        one(&p),
        Parsed::Request {
            packet: Packet {
                quiet: true,
                command: Command::Arith {
                    incr: false,
                    delta: 3,
                    initial: 10,
                    exptime: 0xffff_ffff,
                    ..
                },
                ..
            },
            ..
        }
    ));
    let p = req(TOUCH, b"k", &9u32.to_be_bytes(), &[], 0, 0);
    assert!(matches!(
        one(&p),
        Parsed::Request {
            packet: Packet {
                command: Command::Get {
                    kind: GetKind {
                        with_key: false,
                        touch: Some(9),
                        value: false
                    },
                    ..
                },
                ..
            },
            ..
        }
    ));
    let p = req(FLUSHQ, b"", &9u32.to_be_bytes(), &[], 0, 0);
    assert!(matches!(
        one(&p),
        Parsed::Request {
            packet: Packet {
                quiet: true,
                command: Command::Flush { exptime: Some(9) },
                ..
            },
            ..
        }
    ));
    let p = req(STAT, b"items", &[], &[], 0, 0);
    assert!(matches!(
        one(&p),
        Parsed::Request {
            packet: Packet {
                command: Command::Stat { group: b"items" },
                ..
            },
            ..
        }
    ));
}

#[test]
fn contract_holds_on_a_mixed_stream() {
    let mut stream = req(SET, b"k", &[0; 8], b"v", 0, 0);
    stream.extend(req(0x40, b"ab", b"xy", b"v", 0, 0));
    stream.extend(req(GETKQ, b"k", &[], &[], 0, 0));
    stream.extend(req(SET, b"k", &[0; 8], &[0; 5000], 0, 0));
    for limits in [
        Limits::default(),
        Limits {
            item_size_max: 1024,
            ..Limits::default()
        },
    ] {
        for cut in 0..stream.len() {
            check_binary_contract(&stream[..cut], &limits, false);
            check_binary_contract(&stream[cut..], &limits, true);
        }
    }
}

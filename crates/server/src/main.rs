//! The `mrcached` binary: parse memcached's flags, become `-u`'s user when started as root, daemonize (`-d`, before any thread starts), build the
//! engine and the shared context, load a warm restart (`-e`), start the listener, workers and
//! maintenance thread, write the pid file (`-P`), and run until SIGTERM/SIGINT, SIGUSR1 or `shutdown`;
//! after a graceful stop (SIGUSR1, `shutdown graceful`) with `-e`, save the cache.
//!
//! Stdout carries nothing at start-up except, with `-p 0`, the one line `listening on ADDR:PORT` once the
//! sockets accept connections (tests read it as the readiness signal), with `-U -1` a line `udp listening
//! on ADDR:PORT`, and with `--admin-port 0` a line `admin listening on ADDR:PORT`, in that order. Diagnostics go to stderr. A bad
//! command line exits with status 64 (`EX_USAGE`); a failure to start (address in use) with 1. Under `-d`
//! the process that was started exits once the daemon is up, with 0, or with the daemon's status when it
//! failed to start (`mrcache_server::daemon`).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use mrcache_engine::Engine;
use mrcache_server::admin::Admin;
use mrcache_server::context::ServerContext;
use mrcache_server::daemon::{self, Daemon, Fork, PidFile};
use mrcache_server::net::{Server, ServerOptions};
use mrcache_server::privileges;
use mrcache_server::restart;
use mrcache_server::session::Session;
use mrcache_server::settings::{self, rlimit, Command, Settings, EXIT_USAGE};

fn main() -> ExitCode {
    let mut settings = match Settings::parse_from(std::env::args_os()) {
        Ok(Command::Run(s)) => s,
        Ok(Command::PrintConfig(s)) => {
            let mut out = std::io::stdout().lock();
            for (name, value) in s.describe() {
                let _ = writeln!(out, "{name} = {value}");
            }
            return ExitCode::SUCCESS;
        }
        Ok(Command::Print(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mrcached: {e}");
            eprintln!("Try 'mrcached --help' for more information.");
            return ExitCode::from(EXIT_USAGE as u8);
        }
    };
    for notice in settings.notices() {
        eprintln!("mrcached: {notice}");
    }
    // memcached raises the open-files limit to -c before anything else, or exits with EX_OSERR.
    if let Err(e) = rlimit::ensure_open_files(settings.max_connections) {
        eprintln!("mrcached: {e}");
        return ExitCode::from(rlimit::EXIT_OSERR);
    }
    // Where memcached drops root: after the limit (which may need it), before -d forks, any thread
    // starts or any socket is bound. Its messages carry no program name.
    if let Err(e) = privileges::drop_root(settings.user.as_deref()) {
        eprintln!("{e}");
        return ExitCode::from(e.exit_status());
    }
    // No thread has started yet: the only moment a fork keeps the whole process.
    let daemon = if settings.daemonize {
        let forked = if settings.enable_coredumps {
            daemon::daemonize(true)
        } else {
            settings
                .resolve_paths()
                .and_then(|()| daemon::daemonize(false))
        };
        match forked {
            Ok(Fork::Daemon(daemon)) => Some(daemon),
            Ok(Fork::Starter(status)) => return ExitCode::from(status),
            Err(e) => {
                eprintln!("mrcached: -d/--daemon: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        None
    };
    match run(settings, daemon) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mrcached: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(settings: Settings, daemon: Option<Daemon>) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(path) = &settings.memory_file {
        restart::check_path(path)?;
    }
    let engine = Engine::new(settings.engine_config())?;
    let threads = settings.threads;
    let ctx = Arc::new(ServerContext::new(engine, settings, threads));
    if ctx.settings.tls.enabled {
        let tls = mrcache_server::net::tls::Tls::load(&ctx.settings.tls, ctx.clock().now)?;
        let _ = ctx.tls.set(Arc::new(tls));
    }
    // A warm restart loads once the memory model is in force and before the first connection.
    let server =
        Server::start_prepared(ctx.clone(), Session::new, ServerOptions::default(), |ctx| {
            if let Some(path) = &ctx.settings.memory_file {
                let _ = ctx.restart.set(restart::restore(ctx, path));
            }
            Ok(())
        })?;
    // As memcached, once the sockets are bound.
    let pid_file = match ctx
        .settings
        .pid_file
        .as_deref()
        .map(PidFile::write)
        .transpose()
    {
        Ok(file) => file,
        Err(e) => {
            server.shutdown();
            let _ = server.wait();
            return Err(e.into());
        }
    };
    let served = serve(&ctx, server, daemon);
    // memcached removes its pid file at exit only when it daemonized.
    if let (Some(file), true) = (pid_file, ctx.settings.daemonize) {
        if let Err(e) = file.remove() {
            eprintln!("mrcached: {e}");
        }
    }
    served
}

/// memcached's `MEMCACHED_PORT_FILENAME`: when set, the ports the server listens on, a line per socket
/// as memcached writes them (`TCP INET: 11211`, `UDP INET6: 11211`), written to `FILE.lck` and renamed
/// to FILE once every socket is bound, so whoever sees the file sees them all (memcached's test
/// harness reads it to find a server started on a free port).
fn write_port_file(server: &Server) -> std::io::Result<()> {
    let Some(path) = std::env::var_os("MEMCACHED_PORT_FILENAME") else {
        return Ok(());
    };
    let mut text = String::new();
    for (transport, addrs) in [("TCP", server.local_addrs()), ("UDP", server.udp_addrs())] {
        for a in addrs {
            let family = if a.is_ipv6() { "INET6" } else { "INET" };
            text.push_str(&format!("{transport} {family}: {}\n", a.port()));
        }
    }
    let mut lock = path.clone();
    lock.push(".lck");
    std::fs::write(&lock, text)
        .and_then(|()| std::fs::rename(&lock, &path))
        .map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "MEMCACHED_PORT_FILENAME {}: {e}",
                    std::path::Path::new(&path).display()
                ),
            )
        })
}

/// Announces the running server, starts the admin port, lets a daemon's starting process go, and
/// waits for the server to stop (saving the cache after a graceful stop with `-e`).
fn serve(
    ctx: &Arc<ServerContext>,
    server: Server,
    daemon: Option<Daemon>,
) -> Result<(), Box<dyn std::error::Error>> {
    let verbose = ctx.settings.verbose;
    write_port_file(&server)?;
    if verbose > 0 {
        for a in server.local_addrs() {
            eprintln!("mrcached: listening on {a}");
        }
        for a in server.udp_addrs() {
            eprintln!("mrcached: listening on udp {a}");
        }
        if let Some(path) = &ctx.settings.unix_socket {
            eprintln!("mrcached: listening on unix {}", path.display());
        }
    }
    if let (0, Some(first)) = (ctx.settings.port, server.local_addrs().first()) {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {first}")?;
        out.flush()?;
    }
    if let (settings::EPHEMERAL_UDP_PORT, Some(first)) =
        (ctx.settings.udp_port, server.udp_addrs().first())
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "udp listening on {first}")?;
        out.flush()?;
    }
    let admin = match ctx.settings.admin_port {
        Some(port) => {
            let admin = Admin::start(ctx.clone(), &ctx.settings.admin_listen, port)?;
            if port == 0 {
                let mut out = std::io::stdout().lock();
                writeln!(out, "admin listening on {}", admin.local_addr)?;
                out.flush()?;
            }
            Some(admin)
        }
        None => None,
    };
    if let Some(daemon) = daemon {
        daemon.started(verbose > 0)?;
    }
    server.wait()?;
    // Every worker and the maintenance thread have stopped: the file is one moment of the cache.
    if let (Some(path), true) = (&ctx.settings.memory_file, ctx.is_graceful_shutdown()) {
        let items = restart::save(ctx, path).map_err(|e| {
            format!(
                "warm restart: saving the cache to {} failed: {e}",
                path.display()
            )
        })?;
        eprintln!(
            "mrcached: warm restart: saved {items} items to {}",
            path.display()
        );
    }
    if let Some(admin) = admin {
        admin.join();
    }
    Ok(())
}

//! End to end over a real loopback sshd: strict host keys, unknown keys, an unreachable
//! host, shipping a commit, a fleet test and a race on the self-test benchmark.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use nxvk_fleet::{
    CommandSpec, CommitBundle, Decision, FleetError, FleetTestOptions, HostConfig, HostStatus,
    LoopbackFleet, LoopbackOptions, RaceOptions, SELF_TEST_JOBS, SshOptions, SshTransport,
    Transport, UNREACHABLE_HOST, check_outcome, connect, find_knob, run_fleet_test, run_race,
    self_test_bench_command,
};

fn start_fleet() -> LoopbackFleet {
    let options = LoopbackOptions {
        target_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        bench_command: self_test_bench_command(Path::new(env!("CARGO_BIN_EXE_nxvk-fleet"))),
        icds: Some("/first/icd.json:/second/icd.json".to_owned()),
        jobs: SELF_TEST_JOBS,
    };
    LoopbackFleet::start(&options).expect("loopback sshd starts")
}

fn host<'a>(fleet: &'a LoopbackFleet, name: &str) -> &'a HostConfig {
    fleet
        .config
        .hosts
        .iter()
        .find(|host| host.name == name)
        .expect("host exists")
}

fn run(transport: &mut dyn Transport, script: &str, env: &BTreeMap<String, String>) -> String {
    let spec = CommandSpec {
        script,
        cwd: None,
        env,
        timeout: Duration::from_secs(20),
    };
    let output = transport.run(&spec).expect("command runs");
    assert!(output.success(), "{script}: {output:?}");
    output.stdout
}

/// A throwaway repository with one commit.
fn repository_with_commit() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    let git = |arguments: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(folder.path())
            .args(arguments)
            .status()
            .unwrap();
        assert!(status.success(), "git {arguments:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(folder.path().join("README"), "loopback\n").unwrap();
    git(&["add", "README"]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "-m",
        "one",
    ]);
    folder
}

#[test]
fn loopback_fleet_end_to_end() {
    let mut fleet = start_fleet();
    let strict = SshOptions::default();
    let mesa22 = host(&fleet, "loopback-mesa22").clone();
    let mesa25 = host(&fleet, "loopback-mesa25").clone();
    assert_eq!(mesa22.env["VK_ICD_FILENAMES"], "/first/icd.json");
    assert_eq!(mesa25.env["VK_ICD_FILENAMES"], "/second/icd.json");

    // A trivial command with strict host-key checking, environment and the remote shell.
    let mut transport =
        SshTransport::connect(&mesa22, &strict).expect("strict connect with generated known_hosts");
    let env = BTreeMap::from([("NXVK_FLEET_PROBE".to_owned(), "it's fine".to_owned())]);
    assert_eq!(
        run(&mut transport, "echo \"$NXVK_FLEET_PROBE\"", &env),
        "it's fine\n"
    );
    let spec = CommandSpec {
        script: "exit 7",
        cwd: None,
        env: &env,
        timeout: Duration::from_secs(20),
    };
    assert_eq!(transport.run(&spec).unwrap().exit_code, 7);
    let spec = CommandSpec {
        script: "sleep 20",
        cwd: None,
        env: &env,
        timeout: Duration::from_millis(300),
    };
    let started = Instant::now();
    assert!(matches!(
        transport.run(&spec),
        Err(FleetError::CommandTimeout { .. })
    ));
    // The abandoned session refuses reuse at once instead of waiting for `sleep` to end.
    assert!(transport.run(&spec).is_err());
    drop(transport);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "timeout took {:?}",
        started.elapsed()
    );
    let mut transport = SshTransport::connect(&mesa22, &strict).expect("reconnect");

    // An unknown host key is refused without the accept flag, then accepted and recorded with it.
    let mut unknown = mesa22.clone();
    unknown.known_hosts.path = fleet.folder().join("empty_known_hosts");
    let error = SshTransport::connect(&unknown, &strict).unwrap_err();
    assert!(
        matches!(error, FleetError::UnknownHostKey { .. }),
        "{error}"
    );
    SshTransport::connect(
        &unknown,
        &SshOptions {
            accept_new_host_keys: true,
        },
    )
    .expect("accepted with the flag");
    SshTransport::connect(&unknown, &strict).expect("recorded key now matches");

    // A wrong recorded key is refused even with the accept flag.
    let mut mismatched = mesa22.clone();
    mismatched.known_hosts.path = fleet.folder().join("wrong_known_hosts");
    let other_key = std::fs::read_to_string(fleet.folder().join("client_key.pub")).unwrap();
    std::fs::write(
        &mismatched.known_hosts.path,
        format!("[127.0.0.1]:{} {other_key}", fleet.port),
    )
    .unwrap();
    let error = SshTransport::connect(
        &mismatched,
        &SshOptions {
            accept_new_host_keys: true,
        },
    )
    .unwrap_err();
    assert!(
        matches!(error, FleetError::HostKeyMismatch { .. }),
        "{error}"
    );

    // The unreachable host errors quickly (refused), within its connect timeout.
    let unreachable = host(&fleet, UNREACHABLE_HOST);
    let started = Instant::now();
    let error = connect(unreachable, &strict).unwrap_err();
    assert!(error.is_unreachable(), "{error}");
    assert!(started.elapsed() <= unreachable.connect_timeout() + Duration::from_secs(1));

    // Shipping a commit, twice (clone, then fetch into the existing checkout).
    let repository = repository_with_commit();
    let bundle = CommitBundle::create(repository.path()).unwrap();
    for _ in 0..2 {
        bundle
            .ship(&mut transport, &mesa22.checkout, Duration::from_secs(60))
            .unwrap();
    }
    let head = run(
        &mut transport,
        &format!("git -C '{}' rev-parse HEAD", mesa22.checkout),
        &BTreeMap::new(),
    );
    assert_eq!(head.trim(), bundle.commit);
    drop(transport);

    // The fleet test: both real hosts pass, the unreachable one is reported as such.
    let results = tempfile::tempdir().unwrap();
    let options = FleetTestOptions {
        results: results.path().to_owned(),
        ssh: strict,
    };
    let reports = run_fleet_test(&fleet.config, &fleet.config.hosts, &bundle, &options).unwrap();
    let statuses: Vec<_> = reports
        .iter()
        .map(|report| (report.host.clone(), report.status))
        .collect();
    assert_eq!(check_outcome(&statuses), Ok(()), "{reports:#?}");
    let unreachable_report = reports
        .iter()
        .find(|report| report.host == UNREACHABLE_HOST)
        .unwrap();
    assert!(
        unreachable_report.errors[0].contains("unreachable"),
        "{:?}",
        unreachable_report.errors
    );
    for report in &reports {
        assert!(
            results
                .path()
                .join(&bundle.commit)
                .join(format!("{}.json", report.host))
                .exists()
        );
    }

    // A race on the self-test benchmark: B (switched on) is 10 % faster everywhere -> on.
    let race_options = RaceOptions {
        replicates: 5,
        max_load_per_core: fleet.config.race.max_load_per_core,
        load_policy: fleet.config.race.load_policy,
        results: results.path().to_owned(),
        ssh: strict,
    };
    let knob = find_knob("cse").unwrap();
    let (report, json_path) = run_race(
        &fleet.config,
        &fleet.config.hosts,
        knob,
        &bundle,
        &race_options,
    )
    .unwrap();
    assert_eq!(report.decision, Decision::On, "{report:#?}");
    assert_eq!(report.evidence.len(), 2);
    let unreachable_race = report
        .hosts
        .iter()
        .find(|race| race.host == UNREACHABLE_HOST)
        .unwrap();
    assert_eq!(unreachable_race.status, HostStatus::Unreachable);
    assert!(json_path.exists() && json_path.with_extension("svg").exists());

    // Stopping sshd closes the port.
    let port = fleet.port;
    fleet.stop();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

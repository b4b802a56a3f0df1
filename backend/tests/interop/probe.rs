//! `countersign connector probe`, the real binary, against the demo server
//! and server-everything.

use crate::everything;
use std::process::Output;

/// `countersign connector probe ARGS`, without the probe's settings from
/// this environment; killed if dropped before it exits.
pub(crate) fn probe_command<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_countersign"));
    command
        .args(["connector", "probe"])
        .args(args)
        .env_remove("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS")
        .env_remove("COUNTERSIGN_PROBE_BEARER")
        .env_remove("COUNTERSIGN_PROBE_CLIENT_SECRET")
        .kill_on_drop(true);
    command
}

pub(crate) async fn run_probe(args: &[&str]) -> Output {
    probe_command(args).output().await.expect("the binary runs")
}

pub(crate) fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "probe failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The digests the report prints: one per tool, each 64 hex digits.
fn digests(report: &str) -> Vec<&str> {
    let digests: Vec<&str> = report
        .lines()
        .filter_map(|l| l.trim().strip_prefix("digest: "))
        .collect();
    for digest in &digests {
        assert!(
            digest.len() == 64 && digest.chars().all(|c| c.is_ascii_hexdigit()),
            "{digest} is 64 hex digits"
        );
    }
    digests
}

#[tokio::test]
async fn probe_lists_the_demo_tools_with_raw_annotations_and_calls_echo() {
    let demo = countersign_demo_mcp::DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the demo server starts");
    let allow = demo.addr().to_string();

    let report = stdout(&run_probe(&[&demo.mcp_url(), "--allow-private", &allow]).await);
    assert!(report.contains("protocol: 2026-07-28"), "{report}");
    assert!(report.contains("- search_notes"), "{report}");
    assert!(
        report.contains(r#"annotations: {"openWorldHint":"false","readOnlyHint":"true"}"#)
            || report.contains(r#"annotations: {"readOnlyHint":"true","openWorldHint":"false"}"#),
        "string hints stay strings: {report}"
    );
    let tools: usize = report
        .lines()
        .find_map(|l| l.strip_prefix("tools: "))
        .expect("a tools line")
        .parse()
        .expect("a count");
    assert_eq!(digests(&report).len(), tools, "{report}");

    let called = stdout(
        &run_probe(&[
            &demo.mcp_url(),
            "--allow-private",
            &allow,
            "--call",
            "echo",
            "--args",
            r#"{"text":"hi"}"#,
        ])
        .await,
    );
    let tail: Vec<&str> = called.lines().rev().take(2).collect();
    assert_eq!(tail, ["hi", "call echo: is_error=false"], "{called}");
}

#[tokio::test]
async fn probe_shows_server_everything_tools_with_their_four_hints() {
    let server = everything().await;
    let report =
        stdout(&run_probe(&[&server.mcp_url(), "--allow-private", &server.allow_entry()]).await);
    assert!(report.contains("protocol: 2025-11-25"), "{report}");
    let echo: Vec<&str> = report
        .lines()
        .skip_while(|l| *l != "- echo")
        .take(5)
        .collect();
    assert_eq!(echo.get(1), Some(&"  title: Echo Tool"), "{report}");
    assert_eq!(
        echo.get(2),
        Some(&"  description: Echoes back the input string"),
        "{report}"
    );
    let annotations: serde_json::Value = serde_json::from_str(
        echo.get(3)
            .and_then(|l| l.strip_prefix("  annotations: "))
            .expect("an annotations line"),
    )
    .expect("annotations are JSON");
    assert_eq!(
        annotations,
        serde_json::json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    assert!(digests(&report).len() >= 10, "{report}");
}

#[tokio::test]
async fn probe_refuses_loopback_without_an_allow_list_and_exits_1() {
    let demo = countersign_demo_mcp::DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the demo server starts");

    let output = run_probe(&[&demo.mcp_url()]).await;

    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("refused: 127.0.0.1 is a loopback address"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing printed as a result");
    assert_eq!(demo.calls().total, 0, "no tool ran");
}

#[tokio::test]
async fn probe_reports_a_server_that_is_not_there_and_exits_1() {
    let port = crate::free_port().to_string();
    let allow = format!("127.0.0.1:{port}");

    let output = run_probe(&[
        &format!("http://127.0.0.1:{port}/mcp"),
        "--allow-private",
        &allow,
    ])
    .await;

    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("countersign connector probe: could not reach the MCP server"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing printed as a result");
}

#[tokio::test]
async fn probe_json_prints_each_descriptor_as_sent_beside_the_digest_of_the_text_report() {
    let demo = countersign_demo_mcp::DemoServer::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("the demo server starts");
    let allow = demo.addr().to_string();
    let url = demo.mcp_url();

    let text = stdout(&run_probe(&[&url, "--allow-private", &allow]).await);
    let json: serde_json::Value = serde_json::from_str(&stdout(
        &run_probe(&[&url, "--allow-private", &allow, "--json"]).await,
    ))
    .expect("--json prints one JSON document");

    assert_eq!(json["protocol"], "2026-07-28");
    let tools = json["tools"].as_array().expect("a tools array");
    let json_digests: Vec<&str> = tools
        .iter()
        .map(|t| t["digest"].as_str().expect("a digest"))
        .collect();
    assert_eq!(
        json_digests,
        digests(&text),
        "the same digests, in the same order"
    );
    let stringly = tools
        .iter()
        .map(|t| &t["descriptor"])
        .find(|d| d["name"] == "stringly_annotated")
        .expect("stringly_annotated is listed");
    assert_eq!(
        stringly["annotations"],
        serde_json::json!({"readOnlyHint": "true", "openWorldHint": "false"}),
        "the descriptor as the server sent it"
    );
    assert_eq!(json["calls"], serde_json::json!([]));
}

#[tokio::test]
async fn probe_elicit_answers_a_multi_round_tool_and_without_it_the_call_fails() {
    let demo = countersign_demo_mcp::DemoServer::start_with(
        "127.0.0.1:0".parse().expect("addr"),
        countersign_demo_mcp::DemoState::with_conformance_fixtures(),
    )
    .await
    .expect("the demo server starts");
    let allow = demo.addr().to_string();
    let url = demo.mcp_url();
    let call = ["--call", "test_input_required_result_request_state"];

    let answered = stdout(
        &run_probe(&[
            &url,
            "--allow-private",
            &allow,
            call[0],
            call[1],
            "--elicit",
            "accept-defaults",
        ])
        .await,
    );
    assert!(
        answered.ends_with(
            "call test_input_required_result_request_state: is_error=false\nConfirmed: state-ok\n"
        ),
        "{answered}"
    );

    let refused = run_probe(&[&url, "--allow-private", &allow, call[0], call[1]]).await;
    assert_eq!(refused.status.code(), Some(1));
    let report = String::from_utf8_lossy(&refused.stdout);
    assert!(
        report.contains("call test_input_required_result_request_state: failed: ")
            && report.contains("asked the user for more input"),
        "the report names the failed call: {report}"
    );
}

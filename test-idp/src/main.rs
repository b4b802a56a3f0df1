//! `countersign-test-idp --bind 127.0.0.1:PORT`: the loopback OpenID
//! Connect provider of the browser tests, until it is stopped.

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = match (args.next().as_deref(), args.next()) {
        (Some("--bind"), Some(addr)) => addr,
        _ => "127.0.0.1:0".to_owned(),
    };
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    let provider = countersign_test_idp::Provider::start_on(listener);
    println!("{}", provider.issuer);
    std::future::pending::<()>().await;
    Ok(())
}

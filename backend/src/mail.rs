//! E-mail, through lettre, when `COUNTERSIGN_SMTP_URL` is set: today only
//! the notice that a call waits for an approver's second approval
//! (docs/design.md §6.3). A notice carries a link to the approver's inbox
//! page, which signs in like any page and never acts by itself: deciding
//! is a button on that page. It names the tool and who asked, never the
//! call's arguments.

use lettre::{
    AsyncSmtpTransport, AsyncTransport as _, Message, Tokio1Executor,
    message::{Mailbox, header::ContentType},
};

/// An SMTP sender.
#[derive(Clone)]
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl std::fmt::Debug for Mailer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: only the sender is shown.
        f.debug_struct("Mailer").field("from", &self.from).finish()
    }
}

impl Mailer {
    /// The sender `COUNTERSIGN_SMTP_URL` and `COUNTERSIGN_SMTP_FROM`
    /// describe; `None` when no URL is set.
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Option<Self>> {
        let Some(url) = &config.smtp_url else {
            return Ok(None);
        };
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url.expose())
            .map_err(|e| anyhow::anyhow!("COUNTERSIGN_SMTP_URL is not an SMTP URL: {e}"))?
            .timeout(Some(std::time::Duration::from_secs(20)))
            .build();
        let from = config
            .smtp_from
            .parse()
            .map_err(|e| anyhow::anyhow!("COUNTERSIGN_SMTP_FROM is not an address: {e}"))?;
        Ok(Some(Self { transport, from }))
    }

    /// Sends one plain-text mail to `to`.
    pub async fn send(&self, to: &str, subject: &str, body: String) -> anyhow::Result<()> {
        let message = Message::builder()
            .from(self.from.clone())
            .to(to.parse()?)
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(body)?;
        self.transport.send(message).await?;
        Ok(())
    }
}

/// The notice to an approver that `requester`'s call of `tool` (on the
/// connector they named `connector`) waits for a second approval, with a
/// link to the inbox at `inbox_url` when the public URL is known.
pub fn second_approval_notice(
    requester: &str,
    connector: &str,
    tool: &str,
    inbox_url: Option<&str>,
) -> (String, String) {
    let subject = format!("Approval needed: {tool} for {requester}");
    let mut body = format!(
        "{requester} allowed a call of \"{tool}\" ({connector}) that your organisation's \
         policy gives a second approver. It runs only if an approver allows it too, before \
         it expires.\n\n"
    );
    match inbox_url {
        Some(url) => body.push_str(&format!(
            "Open \"Approvals for you\" to see the call and decide: {url}\n\
             The link only opens the page; nothing is decided until you choose.\n"
        )),
        None => {
            body.push_str("Open \"Approvals for you\" in Countersign to see the call and decide.\n")
        }
    }
    (subject, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notice_names_the_call_and_links_the_inbox_but_never_its_arguments() {
        let (subject, body) = second_approval_notice(
            "ann@firm.example",
            "Mail",
            "send_email",
            Some("https://cs.firm.example/approvals"),
        );
        assert_eq!(subject, "Approval needed: send_email for ann@firm.example");
        assert!(body.contains("https://cs.firm.example/approvals"), "{body}");
        assert!(
            body.contains("nothing is decided until you choose"),
            "{body}"
        );
        let (_, body) = second_approval_notice("a@b.example", "Mail", "send_email", None);
        assert!(!body.contains("http"), "{body}");
    }

    #[test]
    fn a_bad_url_or_sender_is_refused_at_start() {
        let mut config = crate::config::Config::with_database_url("postgres://x");
        assert!(Mailer::from_config(&config).expect("no URL").is_none());
        config.smtp_url = Some(crate::config::Secret::new("http://not-smtp"));
        assert!(Mailer::from_config(&config).is_err());
        config.smtp_url = Some(crate::config::Secret::new("smtp://127.0.0.1:2525"));
        config.smtp_from = "not an address".into();
        assert!(Mailer::from_config(&config).is_err());
        config.smtp_from = "Countersign <cs@firm.example>".into();
        assert!(Mailer::from_config(&config).expect("valid").is_some());
    }
}

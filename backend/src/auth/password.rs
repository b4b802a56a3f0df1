//! Password policy and argon2id hashing.

use super::AuthError;
use argon2::{
    Algorithm, Argon2, Block, Params, Version,
    password_hash::phc::{Output, PasswordHash, Salt},
};
use countersign_api::{PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS};
use std::sync::Arc;
use tokio::sync::{OnceCell, Semaphore};

/// OWASP's minimum for argon2id: 19 MiB, 2 passes, 1 lane.
pub const ARGON2_M_KIB: u32 = 19_456;
/// Passes over memory.
pub const ARGON2_T: u32 = 2;
/// Lanes (argon2's parallelism): one, as OWASP's minimum.
pub const ARGON2_P: u32 = 1;

/// zxcvbn looks at this many characters: its matching is superlinear, and a
/// passphrase this long is not guessable by length alone.
const STRENGTH_CHECK_CHARS: usize = 100;

/// Refuses passwords that are too short, absurdly long, or easy to guess
/// (zxcvbn score below 3, i.e. guessable in under ~10^8 tries, which covers
/// every common-password list it ships). `context` holds words a guesser
/// would try first (the email, the name).
pub fn check_password_policy(password: &str, context: &[&str]) -> Result<(), AuthError> {
    let chars = password.chars().count();
    if chars < PASSWORD_MIN_CHARS {
        return Err(AuthError::WeakPassword(format!(
            "Use at least {PASSWORD_MIN_CHARS} characters. A few unrelated words make a good password."
        )));
    }
    if chars > PASSWORD_MAX_CHARS {
        return Err(AuthError::WeakPassword(format!(
            "Use at most {PASSWORD_MAX_CHARS} characters."
        )));
    }
    let checked: String = password.chars().take(STRENGTH_CHECK_CHARS).collect();
    let entropy = zxcvbn::zxcvbn(&checked, context);
    if (entropy.score() as u8) < 3 {
        let why = entropy
            .feedback()
            .and_then(|f| f.warning())
            .map(|w| format!(" ({w})"))
            .unwrap_or_default();
        return Err(AuthError::WeakPassword(format!(
            "This password is too easy to guess{why}. Add more unrelated words or characters."
        )));
    }
    Ok(())
}

/// Threads that run argon2, for the whole process.
const HASHING_THREADS: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// Hands `job` to one of [`HASHING_THREADS`] long-lived threads (started
/// with the first). Not tokio's blocking pool: each hash needs 19 MiB, and
/// the allocator kept that memory in the arena of the thread that used it;
/// spread over the blocking pool's changing threads, a burst of 200
/// sign-ups left the server 1.5 GB larger for good (issue 15's load
/// scenario). On a few fixed threads, each with one buffer it reuses
/// ([`MEMORY`]), it is at most four times 19 MiB.
fn run_on_hashing_thread(job: Job) -> Result<(), AuthError> {
    static QUEUE: std::sync::OnceLock<std::sync::mpsc::Sender<Job>> = std::sync::OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (send, receive) = std::sync::mpsc::channel::<Job>();
        let receive = Arc::new(std::sync::Mutex::new(receive));
        for n in 0..HASHING_THREADS {
            let receive = receive.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("argon2-{n}"))
                .spawn(move || {
                    loop {
                        let next = receive
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        match next {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(err) = spawned {
                tracing::error!(error = %err, "cannot start a password hashing thread");
            }
        }
        send
    });
    queue
        .send(job)
        .map_err(|_| AuthError::Hashing("no password hashing thread runs".into()))
}

/// argon2id with fixed parameters, run off the async threads, at most a few
/// at a time (each takes 19 MiB), on a few threads of its own.
#[derive(Debug, Clone)]
pub struct PasswordHasher {
    permits: Arc<Semaphore>,
    dummy: Arc<OnceCell<String>>,
}

impl Default for PasswordHasher {
    fn default() -> Self {
        Self {
            permits: Arc::new(Semaphore::new(4)),
            dummy: Arc::new(OnceCell::new()),
        }
    }
}

fn argon2() -> Argon2<'static> {
    #[expect(
        clippy::expect_used,
        reason = "constant parameters within argon2's bounds"
    )]
    let params = Params::new(ARGON2_M_KIB, ARGON2_T, ARGON2_P, None).expect("valid argon2 params");
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

thread_local! {
    /// This hashing thread's argon2 memory (19 MiB at our parameters),
    /// allocated by its first hash and reused by every later one. Without
    /// it each hash allocates and frees 19 MiB, and glibc's allocator,
    /// which then serves allocations that large from the thread's arena
    /// rather than `mmap`, kept 190 logins as 343 MiB more resident memory
    /// (58 MiB with this buffer; `docs/operations.md`). Argon2 writes every block before it reads it, so
    /// what a previous hash left there does not matter.
    static MEMORY: std::cell::RefCell<Vec<Block>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Argon2's and the PHC parser's errors, as ours.
fn hashing(error: impl std::fmt::Display) -> AuthError {
    AuthError::Hashing(error.to_string())
}

/// `argon2` over `password` and `salt` into `out`, in this thread's
/// [`MEMORY`] (sized for `params` first).
fn hash_into(
    argon2: &Argon2<'_>,
    params: &Params,
    password: &[u8],
    salt: &[u8],
    out: &mut [u8],
) -> Result<(), AuthError> {
    MEMORY.with_borrow_mut(|memory| {
        let blocks = params.block_count();
        if memory.len() != blocks {
            *memory = vec![Block::default(); blocks];
        }
        argon2
            .hash_password_into_with_memory(password, salt, out, memory.as_mut_slice())
            .map_err(hashing)
    })
}

/// A PHC string (`$argon2id$v=19$m=19456,t=2,p=1$salt$hash`) for
/// `password` with a new random salt: what argon2's `hash_password` makes,
/// in [`MEMORY`].
fn hash_phc(password: &[u8]) -> Result<String, AuthError> {
    let argon2 = argon2();
    let params = argon2.params().clone();
    // password-hash's recommended salt length; `rand`'s thread RNG is a
    // CSPRNG seeded from the OS.
    let salt: [u8; 16] = rand::random();
    let mut out = [0u8; Params::DEFAULT_OUTPUT_LEN];
    hash_into(&argon2, &params, password, &salt, &mut out)?;
    let phc = PasswordHash {
        algorithm: Algorithm::Argon2id.ident(),
        version: Some(Version::V0x13.into()),
        params: (&params).try_into().map_err(hashing)?,
        salt: Some(Salt::new(&salt).map_err(hashing)?),
        hash: Some(Output::new(&out).map_err(hashing)?),
    };
    Ok(phc.to_string())
}

/// Whether `password` matches the PHC string `phc`, by its own algorithm,
/// version and parameters (as argon2's `verify_password`), in [`MEMORY`];
/// the outputs are compared in constant time (`Output`'s `PartialEq`).
fn verify_phc(password: &[u8], phc: &str) -> Result<bool, AuthError> {
    let phc = PasswordHash::new(phc).map_err(hashing)?;
    let (Some(salt), Some(expected)) = (&phc.salt, &phc.hash) else {
        return Err(AuthError::Hashing(
            "the stored hash has no salt or output".into(),
        ));
    };
    let algorithm = Algorithm::try_from(phc.algorithm.as_str()).map_err(hashing)?;
    let version = phc
        .version
        .map(Version::try_from)
        .transpose()
        .map_err(hashing)?
        .unwrap_or_default();
    let params = Params::try_from(&phc).map_err(hashing)?;
    let argon2 = Argon2::new(algorithm, version, params.clone());
    let mut out = vec![0u8; expected.len()];
    hash_into(&argon2, &params, password, salt.as_ref(), &mut out)?;
    Ok(Output::new(&out).map_err(hashing)? == *expected)
}

impl PasswordHasher {
    /// Hashes a password into a PHC string (`$argon2id$v=19$m=19456,t=2,p=1$…`).
    pub async fn hash(&self, password: &str) -> Result<String, AuthError> {
        let password = password.to_owned();
        self.blocking(move || hash_phc(password.as_bytes())).await
    }

    /// Whether `password` matches the stored PHC string. A malformed stored
    /// hash is an error, not a mismatch.
    pub async fn verify(&self, password: &str, phc: &str) -> Result<bool, AuthError> {
        let password = password.to_owned();
        let phc = phc.to_owned();
        self.blocking(move || verify_phc(password.as_bytes(), &phc))
            .await
    }

    /// Spends the same work as [`Self::verify`] against a hash no password
    /// matches, so an unknown email takes as long as a wrong password.
    pub async fn verify_dummy(&self, password: &str) -> Result<(), AuthError> {
        let dummy = self
            .dummy
            .get_or_try_init(|| async {
                let random: [u8; 32] = rand::random();
                self.hash(&hex::encode(random)).await
            })
            .await?
            .clone();
        self.verify(password, &dummy).await.map(|_| ())
    }

    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
    ) -> Result<T, AuthError> {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| AuthError::Hashing(e.to_string()))?;
        let (done, result) = tokio::sync::oneshot::channel();
        run_on_hashing_thread(Box::new(move || {
            // The caller may have gone (a dropped request): nothing to tell.
            let _ = done.send(work());
        }))?;
        result
            .await
            .map_err(|_| AuthError::Hashing("the password hashing thread stopped".into()))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::{PasswordHasher as _, PasswordVerifier as _};

    /// Ours and argon2's own `hash_password` / `verify_password` agree both
    /// ways, and a wrong password or a changed hash does not verify.
    #[test]
    fn reused_memory_hashes_what_argon2_itself_hashes() {
        let ours = hash_phc(b"tidal quartz lantern orchard").expect("hash");
        argon2()
            .verify_password(b"tidal quartz lantern orchard", ours.as_str())
            .expect("argon2 verifies ours");
        let theirs = argon2()
            .hash_password(b"tidal quartz lantern orchard")
            .expect("argon2 hashes")
            .to_string();
        assert!(verify_phc(b"tidal quartz lantern orchard", &theirs).expect("verify"));
        // Twice on this thread: the second run reuses the first's memory.
        assert!(!verify_phc(b"tidal quartz lantern orchard!", &theirs).expect("verify"));
        let other = hash_phc(b"tidal quartz lantern orchard").expect("hash");
        assert_ne!(ours, other, "a new salt each time");
        // Smaller parameters (a hash from another configuration) still verify.
        let small = Argon2::new(
            Algorithm::Argon2id,
            Version::V0x13,
            Params::new(64, 1, 1, None).expect("params"),
        )
        .hash_password(b"pw")
        .expect("hash")
        .to_string();
        assert!(verify_phc(b"pw", &small).expect("verify"));
        assert!(verify_phc(b"pw", "not a phc string").is_err());
    }

    #[test]
    fn short_long_and_common_passwords_are_refused_with_a_reason() {
        for (password, why) in [
            ("short", "under 12 characters"),
            ("password1234", "a common password"),
            ("qwertyuiop12", "a keyboard walk"),
            ("aaaaaaaaaaaaaaaa", "a repeat"),
            ("ada@example.org1", "the email plus a digit"),
        ] {
            let err = check_password_policy(password, &["ada@example.org"]).expect_err(why);
            assert!(matches!(err, AuthError::WeakPassword(_)), "{why}");
        }
        let too_long = "correct horse battery staple ".repeat(40);
        assert!(
            check_password_policy(&too_long, &[]).is_err(),
            "over 1024 characters"
        );
    }

    #[test]
    fn a_passphrase_is_accepted() {
        check_password_policy("tidal quartz lantern orchard", &["ada@example.org"])
            .expect("a four-word passphrase is strong enough");
    }

    #[tokio::test]
    async fn hashes_are_argon2id_with_owasp_parameters_and_verify() {
        let hasher = PasswordHasher::default();
        let phc = hasher
            .hash("tidal quartz lantern orchard")
            .await
            .expect("hash");
        let parsed = PasswordHash::new(&phc).expect("PHC string");
        assert_eq!(parsed.algorithm.as_str(), "argon2id");
        let params = Params::try_from(&parsed).expect("argon2 params");
        assert!(params.m_cost() >= 19_456, "m = {}", params.m_cost());
        assert!(params.t_cost() >= 2, "t = {}", params.t_cost());
        assert!(params.p_cost() >= 1, "p = {}", params.p_cost());
        assert!(
            hasher
                .verify("tidal quartz lantern orchard", &phc)
                .await
                .expect("verify")
        );
        assert!(
            !hasher
                .verify("tidal quartz lantern orchard!", &phc)
                .await
                .expect("verify")
        );
        hasher
            .verify_dummy("anything at all")
            .await
            .expect("dummy verify");
    }
}

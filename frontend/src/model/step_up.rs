//! The two-factor step-up (DESIGN §4): for an account with MFA on, the four
//! trust-changing actions — turning a connector's trust on, changing its
//! credentials, setting or removing a provider key, "Always allow this
//! tool" — answer 403 `{"detail":"mfa_required"}` unless the session gave a
//! code in the last 10 minutes. [`retry_after_step_up`] runs such an action,
//! and on that answer asks for a code (the dialog of
//! `components::StepUpDialog`, which posts it to `/api/auth/mfa/step-up`)
//! and runs the action once more.
//!
//! Plain Rust, tested on the host: the one-shot [`answer_channel`] that the
//! dialog answers through, and the retry rule. It decides nothing the
//! server decides: which actions need a step-up is only ever learnt from
//! the server's 403.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::api::ApiError;

/// What an action answers when the person closed the code dialog instead of
/// giving a code.
pub const STEP_UP_CANCELLED: &str =
    "Cancelled: this needs a code from your authenticator app. Nothing was changed.";

/// Runs `action`; if the server answers that it needs a two-factor step-up
/// first, waits for `ask_for_code` (true once the server accepted a code)
/// and runs `action` a second time. A second refusal, or a dialog closed
/// without a code, is the action's error — never a loop.
pub async fn retry_after_step_up<T, Action, ActionFut, Ask, AskFut>(
    action: Action,
    ask_for_code: Ask,
) -> Result<T, ApiError>
where
    Action: Fn() -> ActionFut,
    ActionFut: Future<Output = Result<T, ApiError>>,
    Ask: FnOnce() -> AskFut,
    AskFut: Future<Output = bool>,
{
    match action().await {
        Err(error) if error.status == Some(403) && error.is_mfa_required() => {
            if ask_for_code().await {
                action().await
            } else {
                Err(ApiError {
                    status: error.status,
                    detail: STEP_UP_CANCELLED.to_owned(),
                })
            }
        }
        other => other,
    }
}

#[derive(Debug, Default)]
struct Slot {
    answer: Option<bool>,
    waker: Option<Waker>,
}

/// The waiting side of [`answer_channel`]: resolves to the answer, or to
/// `false` if the [`Answerer`] was dropped without answering.
#[derive(Debug)]
pub struct Answer(Rc<RefCell<Slot>>);

/// The answering side of [`answer_channel`].
#[derive(Debug)]
pub struct Answerer(Rc<RefCell<Slot>>);

/// A one-shot `bool` from the dialog to the action waiting for it.
pub fn answer_channel() -> (Answerer, Answer) {
    let slot = Rc::new(RefCell::new(Slot::default()));
    (Answerer(Rc::clone(&slot)), Answer(slot))
}

impl Answerer {
    /// Wakes the waiting action with `answer`.
    pub fn answer(self, answer: bool) {
        self.set(answer);
    }

    fn set(&self, answer: bool) {
        let waker = {
            let mut slot = self.0.borrow_mut();
            if slot.answer.is_some() {
                return;
            }
            slot.answer = Some(answer);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Answerer {
    // A dialog torn down (the page left, signed out) counts as cancelled, so
    // no action waits for ever.
    fn drop(&mut self) {
        self.set(false);
    }
}

impl Future for Answer {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let mut slot = self.0.borrow_mut();
        match slot.answer {
            Some(answer) => Poll::Ready(answer),
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// Polls a future that is ready without outside events.
    fn ready<F: Future>(future: F) -> F::Output {
        let mut future = std::pin::pin!(future);
        let mut cx = Context::from_waker(Waker::noop());
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("the future was not ready"),
        }
    }

    fn refusal(status: u16, detail: &str) -> ApiError {
        ApiError {
            status: Some(status),
            detail: detail.to_owned(),
        }
    }

    /// Runs `retry_after_step_up` over canned answers; returns the result,
    /// how many times the action ran and whether the code was asked for.
    fn run(
        answers: Vec<Result<u8, ApiError>>,
        code_accepted: bool,
    ) -> (Result<u8, ApiError>, usize, bool) {
        let answers = RefCell::new(answers.into_iter());
        let runs = Cell::new(0);
        let asked = Cell::new(false);
        let result = ready(retry_after_step_up(
            || {
                runs.set(runs.get() + 1);
                let next = answers.borrow_mut().next().expect("an answer per run");
                async move { next }
            },
            || {
                asked.set(true);
                async move { code_accepted }
            },
        ));
        (result, runs.get(), asked.get())
    }

    #[test]
    fn an_action_the_server_accepts_runs_once_and_asks_for_nothing() {
        assert_eq!(run(vec![Ok(7)], true), (Ok(7), 1, false));
    }

    #[test]
    fn a_step_up_refusal_asks_for_a_code_then_retries_the_same_action() {
        assert_eq!(
            run(vec![Err(refusal(403, "mfa_required")), Ok(7)], true),
            (Ok(7), 2, true)
        );
    }

    #[test]
    fn a_closed_dialog_runs_nothing_more_and_says_so() {
        let (result, runs, asked) = run(vec![Err(refusal(403, "mfa_required"))], false);
        assert_eq!(runs, 1);
        assert!(asked);
        assert_eq!(result, Err(refusal(403, STEP_UP_CANCELLED)));
    }

    #[test]
    fn a_second_refusal_is_the_error_and_never_a_loop() {
        let (result, runs, _) = run(
            vec![
                Err(refusal(403, "mfa_required")),
                Err(refusal(403, "mfa_required")),
            ],
            true,
        );
        assert_eq!(runs, 2);
        assert_eq!(result, Err(refusal(403, "mfa_required")));
    }

    #[test]
    fn other_refusals_are_passed_on_without_asking() {
        let cases = [
            (
                refusal(403, "You are not allowed to do that."),
                "another 403",
            ),
            (
                refusal(401, "mfa_required"),
                "the sign-in answer is not a step-up",
            ),
            (refusal(422, "mfa_required"), "only 403 asks"),
        ];
        for (error, why) in cases {
            let (result, runs, asked) = run(vec![Err(error.clone())], true);
            assert_eq!((result, runs, asked), (Err(error), 1, false), "{why}");
        }
    }

    #[test]
    fn the_answer_channel_wakes_the_waiting_side_once() {
        let (answerer, answer) = answer_channel();
        let mut answer = std::pin::pin!(answer);
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(answer.as_mut().poll(&mut cx), Poll::Pending);
        answerer.answer(true);
        assert_eq!(answer.as_mut().poll(&mut cx), Poll::Ready(true));
    }

    #[test]
    fn a_dropped_answerer_means_cancelled() {
        let (answerer, answer) = answer_channel();
        drop(answerer);
        assert!(!ready(answer));
    }
}

//! One module per screen. Pages are what routes render; the signed-in ones
//! render inside [`Shell`].

mod activity;
mod approvals;
mod chat;
mod home;
mod not_found;
mod settings;
mod shell;
mod signin;
mod signup;

pub use activity::ActivityPage;
pub use approvals::{ApprovalsForYou, ApprovalsPage};
pub use chat::{ChatPage, chat_path};
pub use home::HomePage;
pub use not_found::NotFoundPage;
pub use settings::{
    AdminSettings, ConnectorsSettings, SettingsPage, SettingsSection, StandingRules,
};
pub use shell::Shell;
pub use signin::SignInPage;
pub use signup::SignUpPage;

//! The connectors as the server last answered them, shared by every piece
//! of the section: `GET /api/connectors` as a resource, with the answers to
//! later requests written into it. It holds no rules, only what the server
//! said.

use countersign_api::Connector;
use leptos::prelude::*;

use crate::api::{self, ApiError};

/// The connectors as last loaded, shared by the list, the add form and the
/// one-click offers; every change the server answers is written back here.
#[derive(Clone, Copy)]
pub(super) struct ConnectorStore {
    /// `None` until the first answer.
    pub(super) list: LocalResource<Result<Vec<Connector>, ApiError>>,
    /// The connector this page just added: its row opens its review.
    just_added: RwSignal<Option<String>>,
}

impl ConnectorStore {
    pub(super) fn new() -> Self {
        Self {
            list: LocalResource::new(api::list_connectors),
            just_added: RwSignal::new(None),
        }
    }

    /// A connector this page just added: shown, and its review opened.
    pub(super) fn added(self, connector: Connector) {
        self.just_added.set(Some(connector.id.clone()));
        self.upsert(connector);
    }

    /// Whether `id` was just added (tracked; [`Self::seen_added`] clears it).
    pub(super) fn is_added(self, id: &str) -> bool {
        self.just_added.with(|a| a.as_deref() == Some(id))
    }

    /// The row of the connector just added has opened its review.
    pub(super) fn seen_added(self) {
        self.just_added.set(None);
    }

    /// Asks the server again; what it has is shown until it answers.
    pub(super) fn reload(self) {
        self.list.refetch();
    }

    /// Replaces the connector with the same id, or appends it.
    pub(super) fn upsert(self, connector: Connector) {
        self.change(
            |items| match items.iter_mut().find(|c| c.id == connector.id) {
                Some(slot) => *slot = connector,
                None => items.push(connector),
            },
        );
    }

    pub(super) fn remove(self, id: &str) {
        self.change(|items| items.retain(|c| c.id != id));
    }

    /// Writes a change the server answered into the loaded list. Before the
    /// first answer (or after a failed one) there is nothing to write into:
    /// ask again instead. (Writing would not do: a write makes the resource
    /// drop the answer still on its way, and the list would stay empty —
    /// seen when "Add" was pressed before the list had loaded.)
    fn change(self, edit: impl FnOnce(&mut Vec<Connector>)) {
        let loaded = self.list.with_untracked(|list| matches!(list, Some(Ok(_))));
        if loaded {
            self.list.update(|list| {
                if let Some(Ok(items)) = list {
                    edit(items);
                }
            });
        } else {
            self.reload();
        }
    }

    pub(super) fn get(self, id: &str) -> Option<Connector> {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().find(|c| c.id == id).cloned(),
            _ => None,
        })
    }

    pub(super) fn ids(self) -> Vec<String> {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().map(|c| c.id.clone()).collect(),
            _ => Vec::new(),
        })
    }

    pub(super) fn has_url(self, url: &str) -> bool {
        self.list.with(|list| match list {
            Some(Ok(items)) => items.iter().any(|c| c.url == url),
            _ => false,
        })
    }
}

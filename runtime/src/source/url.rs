//! `https://` sources: the bytes at a URL, locked by their digest the
//! first time (or pinned by the policy), served from the store afterwards;
//! a URL that later serves other bytes is refused until `airlock pull
//! --update` takes them. Cosign signatures live in registries, so a
//! signature requirement refuses a URL source.

use super::http::Request;
use super::lock::Locked;
use super::pace::Progress;
use super::reference::UrlSource;
use super::registry::block_on;
use super::resolve::{Cause, Expect, Fetched, Mode, Pulled, Resolver};
use super::store::digest_of;

impl Resolver {
    pub(super) fn resolve_url(
        &self,
        source: &UrlSource,
        expect: Expect,
        mode: Mode,
        progress: &Progress,
    ) -> Result<Pulled, Cause> {
        if let Some(key) = expect.key {
            return Err(Cause::Invalid(format!(
                "the policy requires a signature by {}, which only an oci:// source can carry                  (cosign signatures live in the registry)",
                key.label
            )));
        }
        let key = source.url.to_string();
        let pin = expect.sha256.map(|hex| format!("sha256:{hex}"));
        let locked = self.lock_entry(&key)?.map(|l| l.component);
        let wanted = pin.clone().or_else(|| locked.clone());
        if mode == Mode::Load
            && let Some(wanted) = &wanted
            && let Some(bytes) = self.store.get(wanted)
        {
            return Ok(Pulled {
                fetched: Fetched {
                    bytes,
                    component: wanted.clone(),
                    manifest: None,
                    verified_by: None,
                    downloaded: false,
                },
                moved: None,
                relocked: None,
            });
        }
        let http = self.http().with_progress(progress.clone());
        let response = block_on(http.send(Request::get(source.url.clone()), self.max_size))
            .map_err(|e| Cause::Network(e.to_string()))??;
        if !response.status.is_success() {
            return Err(Cause::Invalid(format!(
                "{} answered {}: {}",
                response.url,
                response.status,
                response.excerpt()
            )));
        }
        let current = digest_of(&response.body);
        if let Some(pin) = &pin
            && *pin != current
        {
            return Err(Cause::Pin {
                pinned: pin.trim_start_matches("sha256:").to_string(),
                actual: current,
            });
        }
        let moved = match (&locked, mode) {
            (Some(locked), Mode::Pull { update: true }) if *locked != current => None,
            (Some(locked), _) if *locked != current && pin.is_none() => {
                if mode == Mode::Load {
                    return Err(Cause::Moved {
                        reference: key,
                        locked: locked.clone(),
                        current,
                    });
                }
                Some((locked.clone(), current.clone()))
            }
            _ => None,
        };
        if let Some((locked, _)) = &moved {
            // The lock keeps the old version; the URL no longer serves it.
            let bytes = self.store.get(locked).ok_or_else(|| Cause::Moved {
                reference: key.clone(),
                locked: locked.clone(),
                current: current.clone(),
            })?;
            return Ok(Pulled {
                fetched: Fetched {
                    bytes,
                    component: locked.clone(),
                    manifest: None,
                    verified_by: None,
                    downloaded: false,
                },
                moved,
                relocked: None,
            });
        }
        self.store.put(&current, &response.body)?;
        let relocked = self
            .record(
                &key,
                Locked {
                    manifest: None,
                    component: current.clone(),
                },
            )?
            .then_some(locked);
        Ok(Pulled {
            fetched: Fetched {
                bytes: response.body.to_vec(),
                component: current,
                manifest: None,
                verified_by: None,
                downloaded: true,
            },
            moved: None,
            relocked,
        })
    }
}

//! What a catalogue needs of an ISO record that the store cannot say, given by the caller
//! ([`IsoOptions`]: title, contact and its e-mail, bounding box, keywords, topic
//! categories), checked before anything is read; and how a record names the store: by its
//! identity and, for a store others can reach, its URL (never a local path, which names
//! nothing outside the machine the export ran on).

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};

/// ISO 19115's `MD_TopicCategoryCode` values in both encodings (ISO 19139's list).
pub const TOPIC_CATEGORIES: [&str; 19] = [
    "farming",
    "biota",
    "boundaries",
    "climatologyMeteorologyAtmosphere",
    "economy",
    "elevation",
    "environment",
    "geoscientificInformation",
    "health",
    "imageryBaseMapsEarthCover",
    "intelligenceMilitary",
    "inlandWaters",
    "location",
    "oceans",
    "planningCadastre",
    "society",
    "structure",
    "transportation",
    "utilitiesCommunication",
];

/// The values ISO 19115-3 adds to [`TOPIC_CATEGORIES`] (refused for ISO 19139, whose
/// schema does not have them).
pub const TOPIC_CATEGORIES_19115_3: [&str; 2] = ["extraTerrestrial", "disaster"];

/// A geographic bounding box in decimal degrees (WGS 84 longitude and latitude), as ISO
/// 19115's `EX_GeographicBoundingBox` holds it. `west > east` is a box across the
/// antimeridian.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bbox {
    /// Westernmost longitude.
    pub west: f64,
    /// Southernmost latitude.
    pub south: f64,
    /// Easternmost longitude.
    pub east: f64,
    /// Northernmost latitude.
    pub north: f64,
}

impl Bbox {
    /// `W,S,E,N` (the order of `pyproj`'s `area_of_use.bounds` and of GeoJSON's `bbox`).
    pub fn parse(s: &str) -> Result<Bbox> {
        let bad = |why: String| Error::invalid(Param::Bbox, text![format!("{s:?}: {why}")]);
        let v: Vec<f64> = s
            .split(',')
            .map(|p| p.trim().parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad("expected four numbers W,S,E,N in degrees".into()))?;
        let [west, south, east, north] = v[..] else {
            return Err(bad(format!(
                "expected four numbers W,S,E,N, got {}",
                v.len()
            )));
        };
        for (name, x, lim) in [
            ("west", west, 180.0),
            ("east", east, 180.0),
            ("south", south, 90.0),
            ("north", north, 90.0),
        ] {
            if !(x.is_finite() && (-lim..=lim).contains(&x)) {
                return Err(bad(format!("{name} {x} is outside -{lim}..{lim} degrees")));
            }
        }
        if south > north {
            return Err(bad(format!("south {south} is north of north {north}")));
        }
        Ok(Bbox {
            west,
            south,
            east,
            north,
        })
    }
}

/// What the store cannot say about the record.
#[derive(Debug, Clone, Default)]
pub struct IsoOptions {
    /// Title of the data set (default: `Lineage of run <run_id>`).
    pub title: Option<String>,
    /// Organisation to name as the metadata contact and the resource's point of contact
    /// (default: none, `nilReason="missing"`).
    pub contact: Option<String>,
    /// The contact's e-mail address (needs [`IsoOptions::contact`]).
    pub contact_email: Option<String>,
    /// The data set's geographic extent (default: none given: the record has no
    /// geographic element).
    pub bbox: Option<Bbox>,
    /// Free keywords (`MD_Keywords`, in the order given).
    pub keywords: Vec<String>,
    /// Topic categories ([`TOPIC_CATEGORIES`], and for ISO 19115-3 [`TOPIC_CATEGORIES_19115_3`]).
    pub topic_categories: Vec<String>,
}

impl IsoOptions {
    /// Refuse what the record cannot carry: an e-mail without a contact or not an
    /// address, an empty keyword, a topic category the encoding does not have.
    pub fn check(&self, iso19139: bool) -> Result<()> {
        if let Some(e) = &self.contact_email {
            if self.contact.is_none() {
                return Err(Error::usage(text![
                    Param::ContactEmail,
                    " needs ",
                    Param::Contact,
                    " (the organisation the address reaches)"
                ]));
            }
            let ok = e.split_once('@').is_some_and(|(local, domain)| {
                !local.is_empty() && !domain.is_empty() && !domain.contains('@')
            }) && !e.chars().any(|c| c.is_whitespace() || c.is_control());
            if !ok {
                return Err(Error::invalid(
                    Param::ContactEmail,
                    text![format!("{e:?} is not an e-mail address (local@domain)")],
                ));
            }
        }
        if self.keywords.iter().any(|k| k.trim().is_empty()) {
            return Err(Error::invalid(Param::Keyword, text!["a keyword is empty"]));
        }
        for t in &self.topic_categories {
            if TOPIC_CATEGORIES.contains(&t.as_str()) {
                continue;
            }
            let why = if TOPIC_CATEGORIES_19115_3.contains(&t.as_str()) && iso19139 {
                format!("{t:?} is an ISO 19115-3 topic category that ISO 19139 does not have")
            } else if TOPIC_CATEGORIES_19115_3.contains(&t.as_str()) {
                continue;
            } else {
                format!(
                    "{t:?} is not an ISO 19115 topic category (one of {})",
                    TOPIC_CATEGORIES.join(", ")
                )
            };
            return Err(Error::invalid(Param::TopicCategory, text![why]));
        }
        Ok(())
    }
}

/// The store's URL as a record may publish it: `None` for a local (`file://`) or
/// in-memory store, whose path names nothing a reader of the record can reach; otherwise
/// the URL without user information, query or fragment (which may carry credentials).
pub(crate) fn public_store_url(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.eq_ignore_ascii_case("file") || scheme.eq_ignore_ascii_case("memory") {
        return None;
    }
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path = path.trim_end_matches('/');
    Some(if path.is_empty() {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}/{path}")
    })
}

/// How a record names the store, in words: `lineage-store <id>` and, when it has one,
/// its public URL.
pub(crate) fn store_name(store_id: Option<&str>, public_url: Option<&str>) -> String {
    let id = match store_id {
        Some(id) => format!("lineage-store {id}"),
        None => "a lineage-store without a recorded identity".to_string(),
    };
    match public_url {
        Some(u) => format!("{id} at {u}"),
        None => id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_published_without_secrets_and_a_local_path_not_at_all() {
        assert_eq!(public_store_url("file:///home/me/store"), None);
        assert_eq!(public_store_url("memory://"), None);
        assert_eq!(
            public_store_url("s3://bucket/lineage/"),
            Some("s3://bucket/lineage".into())
        );
        assert_eq!(
            public_store_url("https://u:pw@acct.blob.core.windows.net/c/p?sig=x#f"),
            Some("https://acct.blob.core.windows.net/c/p".into())
        );
    }

    #[test]
    fn bbox_is_four_degrees_in_range() {
        let b = Bbox::parse("5.87, 47.27,15.04,55.06").unwrap();
        assert_eq!(
            (b.west, b.south, b.east, b.north),
            (5.87, 47.27, 15.04, 55.06)
        );
        assert!(Bbox::parse("170,-10,-170,10").is_ok());
        for bad in [
            "1,2,3",
            "a,b,c,d",
            "0,91,1,92",
            "0,10,1,5",
            "NaN,0,1,1",
            "-181,0,1,1",
        ] {
            assert!(Bbox::parse(bad).is_err(), "{bad}");
        }
    }
}

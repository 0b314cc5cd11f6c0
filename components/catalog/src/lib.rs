//! `catalog`: price look-up (read-only) and restocking (destructive) for a
//! small article catalog.
//!
//! The price list is `data/prices.json`, built into the component. Stock
//! levels live in `stock.json` in the guest folder `/data`, which the
//! operator's policy must grant (read-write) for `restock` to work.
//!
//! It carries a skill, `catalog-pricing` (`skills/`): how to quote and
//! restock with these tools, served by airlock under `skill://`.

use airlock_sdk::tool;
use std::collections::BTreeMap;
use std::path::Path;

/// The price list, built into the component.
const PRICES: &str = include_str!("../data/prices.json");

/// The guest folder that holds `stock.json`.
const DATA_DIR: &str = "/data";

fn price_of(sku: &str) -> Result<f64, String> {
    let prices: BTreeMap<String, f64> =
        serde_json::from_str(PRICES).map_err(|e| format!("the price list is damaged: {e}"))?;
    prices
        .get(sku)
        .copied()
        .ok_or_else(|| format!("unknown article {sku:?}"))
}

/// Returns the current unit price of one catalog article.
#[tool(
    read_only,
    idempotent,
    title = "Look up price",
    icon(src = "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAxNiAxNiI+PHRleHQgeT0iMTMiIGZvbnQtc2l6ZT0iMTMiPuKCrDwvdGV4dD48L3N2Zz4=", mime_type = "image/svg+xml", sizes = ["any"])
)]
pub fn lookup_price(
    #[arg(description = "Article number, e.g. SKU-1001", example = "SKU-1001")] sku: String,
) -> Result<f64, String> {
    price_of(&sku)
}

/// Adds units to the stock level of one catalog article and returns the new
/// stock level. Needs the folder `/data` (read-write), where it keeps
/// `stock.json`.
#[tool(destructive, title = "Restock article")]
pub fn restock(
    #[arg(description = "Article number, e.g. SKU-1001", example = "SKU-1001")] sku: String,
    #[arg(
        description = "Number of units to add (greater than zero)",
        example = 5
    )]
    units: u32,
) -> Result<u64, String> {
    restock_in(Path::new(DATA_DIR), &sku, units)
}

/// `restock` against the stock file in `dir` (a separate function so native
/// tests can use a temporary folder).
pub fn restock_in(dir: &Path, sku: &str, units: u32) -> Result<u64, String> {
    if units == 0 {
        return Err("units must be greater than zero".into());
    }
    price_of(sku)?;
    if !dir.is_dir() {
        return Err(format!(
            "no folder is granted at {}: restock keeps stock levels in {}/stock.json, so the operator's policy must mount a read-write folder there",
            dir.display(),
            dir.display()
        ));
    }
    let file = dir.join("stock.json");
    let mut stock: BTreeMap<String, u64> = match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a stock file: {e}", file.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    let level = stock.entry(sku.to_owned()).or_insert(0);
    *level = level.saturating_add(u64::from(units));
    let new_level = *level;
    let text = serde_json::to_string_pretty(&stock)
        .map_err(|e| format!("cannot encode the stock levels: {e}"))?;
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    airlock_sdk::info!("{sku}: stock is now {new_level}");
    Ok(new_level)
}

/// The skill that teaches an agent to use these tools: `skills/` holds
/// `catalog-pricing` (its SKILL.md and a reference), built into the
/// component and served as `skill://catalog-pricing/SKILL.md`.
#[airlock_sdk::skills("skills")]
pub struct Skills;

airlock_sdk::export_tools!(lookup_price, restock, Skills);

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_sdk::Error;
    use serde_json::json;

    #[test]
    fn looks_up_prices() {
        let out = TOOLS.call("lookup_price", r#"{"sku":"SKU-1001"}"#).unwrap();
        assert_eq!(out.structured, Some(json!({"result": 12.5})));
        assert_eq!(
            TOOLS.call("lookup_price", r#"{"sku":"SKU-9"}"#),
            Err(Error::Failed("unknown article \"SKU-9\"".into()))
        );
    }

    #[test]
    fn restocks_in_a_folder() {
        let dir = std::env::temp_dir().join(format!("airlock-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(restock_in(&dir, "SKU-1001", 5), Ok(5));
        assert_eq!(restock_in(&dir, "SKU-1001", 3), Ok(8));
        assert!(
            restock_in(&dir, "SKU-1001", 0)
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(
            restock_in(&dir, "SKU-9", 1)
                .unwrap_err()
                .contains("unknown article")
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            restock_in(&dir, "SKU-1001", 1)
                .unwrap_err()
                .contains("no folder is granted")
        );
    }

    #[test]
    fn describes_hints() {
        let tools = TOOLS.describe();
        assert!(tools[0].hints.read_only && tools[0].hints.idempotent);
        assert!(tools[1].hints.destructive && !tools[1].hints.idempotent);
        assert_eq!(
            tools[1].input_schema["properties"]["units"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32, "description": "Number of units to add (greater than zero)", "examples": [5]})
        );
        assert_eq!(
            tools[0].input_schema["properties"]["sku"]["examples"],
            json!(["SKU-1001"])
        );
    }
}

//! `stock-chart`: the catalog's stock levels as an MCP App — a tool whose
//! result a host shows in an interactive chart (`ui/levels.html`, served as
//! the resource `ui://stock-chart/levels.html`), and an app-only tool the
//! chart's buttons call back through the host to restock an article.
//!
//! The articles are the catalog's (`../catalog/data/prices.json`, built in);
//! stock levels live in `stock.json` in the guest folder `/data`, the file
//! the catalog's `restock` keeps, so both components granted the same folder
//! see the same stock.

use airlock_sdk::{ToolSchema, resource, tool};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The catalog's price list, built into the component.
const PRICES: &str = include_str!("../../catalog/data/prices.json");

/// The chart: one self-contained HTML document (inline script and style).
const LEVELS_HTML: &str = include_str!("../ui/levels.html");

/// Where the chart is served; both tools name it in `_meta.ui.resourceUri`.
pub const LEVELS_URI: &str = "ui://stock-chart/levels.html";

/// The guest folder that holds `stock.json`.
const DATA_DIR: &str = "/data";

/// The most units one call may add.
const MAX_UNITS: u32 = 10_000;

/// One catalog article and how many units are in stock.
#[derive(Debug, Clone, PartialEq, Serialize, ToolSchema)]
pub struct Article {
    /// Article number, e.g. SKU-1001.
    pub sku: String,
    /// Unit price.
    pub price: f64,
    /// Units in stock.
    pub stock: u64,
}

/// The stock level of every catalog article.
#[derive(Debug, Clone, PartialEq, Serialize, ToolSchema)]
pub struct Levels {
    /// Every article, by article number.
    pub articles: Vec<Article>,
}

/// What a restock changed.
#[derive(Debug, Clone, PartialEq, Serialize, ToolSchema)]
pub struct Change {
    /// The article restocked.
    pub sku: String,
    /// Units added.
    pub units: u32,
    /// Its new stock level.
    pub stock: u64,
}

/// The stock levels after a restock, and what changed.
#[derive(Debug, Clone, PartialEq, Serialize, ToolSchema)]
pub struct Restocked {
    /// Every article, by article number, after the restock.
    pub articles: Vec<Article>,
    /// The article restocked and its new level.
    pub changed: Change,
}

/// The chart of the stock levels: an MCP App view. It draws what
/// `stock_levels` returns and calls `add_stock` when the user clicks
/// "Restock".
#[resource(
    uri = "ui://stock-chart/levels.html",
    name = "stock_levels_chart",
    title = "Stock levels chart",
    mime_type = "text/html;profile=mcp-app",
    meta = r#"{"ui": {"prefersBorder": true}}"#
)]
pub fn levels_chart() -> &'static str {
    LEVELS_HTML
}

/// Shows the stock level of every catalog article (article number, unit
/// price, units in stock). Hosts with MCP Apps show it as an interactive
/// chart. Reads `stock.json` in the folder `/data` (read-only is enough).
#[tool(
    read_only,
    idempotent,
    title = "Stock levels",
    ui = "ui://stock-chart/levels.html"
)]
pub fn stock_levels() -> Result<Levels, String> {
    levels_in(Path::new(DATA_DIR))
}

/// Adds units to the stock of one catalog article and returns every
/// article's level. Called by the stock chart's "Restock" buttons (only the
/// app sees it); needs the folder `/data` read-write.
#[tool(
    destructive,
    title = "Add stock",
    ui = "ui://stock-chart/levels.html",
    meta = r#"{"ui": {"visibility": ["app"]}}"#
)]
pub fn add_stock(
    #[arg(description = "Article number, e.g. SKU-1001", example = "SKU-1001")] sku: String,
    #[arg(description = "Units to add, 1 to 10000", example = 10)] units: u32,
) -> Result<Restocked, String> {
    add_stock_in(Path::new(DATA_DIR), &sku, units)
}

fn prices() -> Result<BTreeMap<String, f64>, String> {
    serde_json::from_str(PRICES).map_err(|e| format!("the price list is damaged: {e}"))
}

/// The stock file in `dir`; no file yet means nothing in stock.
fn read_stock(dir: &Path) -> Result<BTreeMap<String, u64>, String> {
    if !dir.is_dir() {
        return Err(format!(
            "no folder is granted at {}: the stock levels are in {}/stock.json, so the operator's policy must mount a folder there",
            dir.display(),
            dir.display()
        ));
    }
    let file = dir.join("stock.json");
    match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a stock file: {e}", file.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(format!("cannot read {}: {e}", file.display())),
    }
}

fn articles(stock: &BTreeMap<String, u64>) -> Result<Vec<Article>, String> {
    Ok(prices()?
        .into_iter()
        .map(|(sku, price)| Article {
            stock: stock.get(&sku).copied().unwrap_or(0),
            sku,
            price,
        })
        .collect())
}

/// `stock_levels` against the stock file in `dir` (native tests use a
/// temporary folder).
pub fn levels_in(dir: &Path) -> Result<Levels, String> {
    Ok(Levels {
        articles: articles(&read_stock(dir)?)?,
    })
}

/// `add_stock` against the stock file in `dir`.
pub fn add_stock_in(dir: &Path, sku: &str, units: u32) -> Result<Restocked, String> {
    if units == 0 || units > MAX_UNITS {
        return Err(format!("units must be 1 to {MAX_UNITS}, not {units}"));
    }
    if !prices()?.contains_key(sku) {
        return Err(format!("unknown article {sku:?}"));
    }
    let mut stock = read_stock(dir)?;
    let level = stock.entry(sku.to_owned()).or_insert(0);
    *level = level.saturating_add(u64::from(units));
    let new_level = *level;
    let file = dir.join("stock.json");
    let text = serde_json::to_string_pretty(&stock)
        .map_err(|e| format!("cannot encode the stock levels: {e}"))?;
    std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    airlock_sdk::info!("{sku}: stock is now {new_level}");
    Ok(Restocked {
        articles: articles(&stock)?,
        changed: Change {
            sku: sku.to_owned(),
            units,
            stock: new_level,
        },
    })
}

airlock_sdk::export_tools!(stock_levels, add_stock, levels_chart);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("airlock-stock-chart-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn levels_list_every_article_with_its_stock() {
        let dir = temp_dir("levels");
        std::fs::write(dir.join("stock.json"), r#"{"SKU-1003": 4}"#).unwrap();
        let levels = levels_in(&dir).unwrap();
        let shown: Vec<(&str, u64)> = levels
            .articles
            .iter()
            .map(|a| (a.sku.as_str(), a.stock))
            .collect();
        assert_eq!(
            shown,
            [
                ("SKU-1001", 0),
                ("SKU-1002", 0),
                ("SKU-1003", 4),
                ("SKU-2001", 0)
            ]
        );
        assert_eq!(levels.articles[2].price, 149.0);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            levels_in(&dir)
                .unwrap_err()
                .contains("no folder is granted")
        );
    }

    #[test]
    fn add_stock_writes_the_file_and_says_what_changed() {
        let dir = temp_dir("add");
        let out = add_stock_in(&dir, "SKU-1002", 10).unwrap();
        assert_eq!(
            out.changed,
            Change {
                sku: "SKU-1002".into(),
                units: 10,
                stock: 10
            }
        );
        assert_eq!(add_stock_in(&dir, "SKU-1002", 5).unwrap().changed.stock, 15);
        assert_eq!(levels_in(&dir).unwrap().articles[1].stock, 15);
        assert!(
            add_stock_in(&dir, "SKU-1002", 0)
                .unwrap_err()
                .contains("1 to 10000")
        );
        assert!(
            add_stock_in(&dir, "SKU-9", 1)
                .unwrap_err()
                .contains("unknown article")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_tools_link_the_chart_and_the_chart_is_served() {
        assert_eq!(
            TOOLS.tool_meta(),
            [
                (
                    "stock_levels".to_string(),
                    json!({"ui": {"resourceUri": LEVELS_URI}})
                ),
                (
                    "add_stock".to_string(),
                    json!({"ui": {"resourceUri": LEVELS_URI, "visibility": ["app"]}})
                ),
            ]
        );
        let resources = TOOLS.resources();
        assert_eq!(resources.len(), 1);
        assert_eq!(resources[0].uri, LEVELS_URI);
        assert_eq!(
            resources[0].mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        let contents = TOOLS.read(LEVELS_URI).unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(
            contents[0].mime_type.as_deref(),
            Some("text/html;profile=mcp-app")
        );
        assert_eq!(
            contents[0].body,
            airlock_sdk::ResourceBody::Text(LEVELS_HTML.into())
        );
    }
}

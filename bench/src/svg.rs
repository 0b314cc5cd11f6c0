//! Hand-rolled SVG charts (no plotting dependency).

use std::fmt::Write as _;

const COLORS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn header(w: u32, h: u32, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
        w / 2,
        esc(title)
    )
}

/// A series of a line chart: name, values at each x, dashed or not.
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
    pub dashed: bool,
    pub color: usize,
}

/// Lines over categorical x values, log-scaled y.
pub fn lines(
    title: &str,
    x_title: &str,
    y_title: &str,
    xs: &[String],
    series: &[Series],
) -> String {
    let (w, h) = (760u32, 420u32);
    let (left, right, top, bottom) = (70.0, 230.0, 40.0, 50.0);
    let pw = f64::from(w) - left - right;
    let ph = f64::from(h) - top - bottom;
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .filter(|v| *v > 0.0)
        .collect();
    let lo = all.iter().copied().fold(f64::MAX, f64::min).max(1e-3);
    let hi = all.iter().copied().fold(0.0, f64::max).max(lo * 10.0);
    let (llo, lhi) = (lo.log10().floor(), hi.log10().ceil());
    let y = |v: f64| top + ph - (v.max(lo).log10() - llo) / (lhi - llo) * ph;
    let x = |i: usize| {
        left + if xs.len() > 1 {
            i as f64 / (xs.len() - 1) as f64 * pw
        } else {
            pw / 2.0
        }
    };
    let mut s = header(w, h, title);
    let mut decade = llo;
    while decade <= lhi {
        let v = 10f64.powf(decade);
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#ddd\"/>\
             <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + pw,
            y(v),
            y(v),
            left - 6.0,
            y(v) + 4.0,
            fmt_num(v)
        );
        decade += 1.0;
    }
    for (i, label) in xs.iter().enumerate() {
        let _ = writeln!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{1:.1}\" stroke=\"#eee\"/>\
             <text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>",
            x(i),
            top + ph,
            top + ph + 18.0,
            esc(label)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
         <text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1})\">{}</text>",
        left + pw / 2.0,
        h - 10,
        esc(x_title),
        top + ph / 2.0,
        top + ph / 2.0,
        esc(y_title)
    );
    for (n, se) in series.iter().enumerate() {
        let color = COLORS[se.color % COLORS.len()];
        let dash = if se.dashed {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let points: Vec<String> = se
            .values
            .iter()
            .enumerate()
            .filter(|(_, v)| **v > 0.0)
            .map(|(i, v)| format!("{:.1},{:.1}", x(i), y(*v)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash} points=\"{}\"/>",
            points.join(" ")
        );
        for p in &points {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                s,
                "<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let ly = top + 10.0 + n as f64 * 20.0;
        let lx = left + pw + 15.0;
        let _ = writeln!(
            s,
            "<line x1=\"{lx}\" x2=\"{}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"{dash}/>\
             <text x=\"{}\" y=\"{}\">{}</text>",
            lx + 24.0,
            lx + 30.0,
            ly + 4.0,
            esc(&se.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Horizontal stacked bars: one bar per row, one segment per part (µs).
pub fn stacked(title: &str, unit: &str, parts: &[&str], rows: &[(String, Vec<f64>)]) -> String {
    let bar = 34.0;
    let (left, right, top) = (110.0, 40.0, 50.0);
    let legend_rows = parts.len().div_ceil(3) as f64;
    let w = 860u32;
    let h = (top + rows.len() as f64 * (bar * 2.0) + 40.0 + legend_rows * 20.0) as u32;
    let pw = f64::from(w) - left - right;
    let mut s = header(w, h, title);
    for (r, (label, values)) in rows.iter().enumerate() {
        let total: f64 = values.iter().sum();
        let scale = if total > 0.0 { pw / total } else { 0.0 };
        let y = top + r as f64 * bar * 2.0;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 8.0,
            y + bar / 2.0 + 4.0,
            esc(label)
        );
        let mut x = left;
        for (i, v) in values.iter().enumerate() {
            let wv = v * scale;
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{wv:.1}\" height=\"{bar}\" fill=\"{}\"><title>{}: {} {unit}</title></rect>",
                COLORS[i % COLORS.len()],
                esc(parts[i]),
                fmt_num(*v)
            );
            if wv > 46.0 {
                let _ = writeln!(
                    s,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"white\" font-size=\"11\">{}</text>",
                    x + wv / 2.0,
                    y + bar / 2.0 + 4.0,
                    fmt_num(*v)
                );
            }
            x += wv;
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">total {} {unit} (100%)</text>",
            left,
            y + bar + 14.0,
            fmt_num(total)
        );
    }
    let ly0 = top + rows.len() as f64 * bar * 2.0 + 10.0;
    for (i, part) in parts.iter().enumerate() {
        let lx = left + (i % 3) as f64 * 240.0;
        let ly = ly0 + (i / 3) as f64 * 20.0;
        let _ = writeln!(
            s,
            "<rect x=\"{lx}\" y=\"{ly}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            COLORS[i % COLORS.len()],
            lx + 18.0,
            ly + 10.0,
            esc(part)
        );
    }
    s.push_str("</svg>\n");
    s
}

pub fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

//! Plain WIT functions, as wassette-style components export them: no
//! airlock contract, no hints, doc comments in the WIT. airlock serves
//! each function as a tool (`add`, `types.echo-u8`, …).

wit_bindgen::generate!({ path: "wit", world: "plain", generate_all });

use exports::airlock_test::plain::types::{Color, Perms, Point, Profile, Shape};

struct Plain;

impl Guest for Plain {
    fn add(a: i64, b: i64) -> i64 {
        a.wrapping_add(b)
    }

    fn write_file(name: String, text: String) -> Result<(), String> {
        std::fs::write(format!("/data/{name}"), text).map_err(|e| e.to_string())
    }

    fn read_file(name: String) -> Result<String, String> {
        std::fs::read_to_string(format!("/data/{name}")).map_err(|e| e.to_string())
    }

    fn undocumented(x: u8) -> u8 {
        x
    }

    fn config_value(key: String) -> Option<String> {
        wasi::config::store::get(&key).ok().flatten()
    }
}

impl exports::airlock_test::plain::types::Guest for Plain {
    fn echo_bool(v: bool) -> bool {
        v
    }
    fn echo_s8(v: i8) -> i8 {
        v
    }
    fn echo_s16(v: i16) -> i16 {
        v
    }
    fn echo_s32(v: i32) -> i32 {
        v
    }
    fn echo_s64(v: i64) -> i64 {
        v
    }
    fn echo_u8(v: u8) -> u8 {
        v
    }
    fn echo_u16(v: u16) -> u16 {
        v
    }
    fn echo_u32(v: u32) -> u32 {
        v
    }
    fn echo_u64(v: u64) -> u64 {
        v
    }
    fn echo_f32(v: f32) -> f32 {
        v
    }
    fn echo_f64(v: f64) -> f64 {
        v
    }
    fn echo_char(v: char) -> char {
        v
    }
    fn echo_string(v: String) -> String {
        v
    }
    fn echo_bytes(v: Vec<u8>) -> Vec<u8> {
        v
    }
    fn echo_list(v: Vec<u32>) -> Vec<u32> {
        v
    }
    fn echo_option(v: Option<u16>) -> Option<u16> {
        v
    }
    fn echo_result(v: Result<String, u32>) -> Result<Result<String, u32>, String> {
        Ok(v)
    }
    fn echo_tuple(v: (String, u8, bool)) -> (String, u8, bool) {
        v
    }
    fn echo_point(v: Point) -> Point {
        v
    }
    fn echo_shape(v: Shape) -> Shape {
        v
    }
    fn echo_color(v: Color) -> Color {
        v
    }
    fn echo_perms(v: Perms) -> Perms {
        v
    }
    fn echo_profile(v: Profile) -> Profile {
        v
    }

    fn area(shape: Shape) -> f64 {
        match shape {
            Shape::Circle(r) => std::f64::consts::PI * r * r,
            Shape::Square(s) => s * s,
            Shape::Dot => 0.0,
        }
    }

    fn divide(a: i32, b: i32) -> Result<i32, String> {
        a.checked_div(b)
            .ok_or_else(|| format!("cannot divide {a} by {b}"))
    }

    fn out_of_bounds(p: Point) -> Result<String, Point> {
        Err(p)
    }

    fn not_a_number() -> f64 {
        f64::NAN
    }
}

export!(Plain);

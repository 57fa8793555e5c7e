fn main() {
    println!("squad {}", env!("CARGO_PKG_VERSION"));
}

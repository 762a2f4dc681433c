//! What making and dropping a context's empty caches costs on the host: eleven
//! `BoundedCache`s at the default bound (a context has that many), made and dropped
//! 20,000 times. No GPU needed.
//!
//! cargo run --release --example cache_probe

use cudnn_rs::cache::BoundedCache;

fn main() {
    let rounds = 20_000u32;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        let caches: Vec<BoundedCache<[u64; 64], u64>> =
            (0..11).map(|_| BoundedCache::default()).collect();
        std::hint::black_box(&caches);
    }
    let us = start.elapsed().as_secs_f64() / f64::from(rounds) * 1e6;
    println!("11 empty caches made and dropped: {us:.2} us");
}

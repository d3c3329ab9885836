fn main() {
    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let no_guess = std::env::args().nth(2).is_some();
    let r = fprev::Reveal::new(n)
        .known_orders(!no_guess)
        .run_target(fprev::target::FnTarget(|x: &[f32]| x.iter().sum::<f32>()))
        .unwrap();
    println!("{} probes", r.probes);
}

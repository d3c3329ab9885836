//! Registrations made in a library crate are checked from its integration test.
//!
//! The `use` below is the rule: a binary only sees the registrations of the crates it
//! links, and a crate the test never names is not linked.
use fprev_testlib as _;

#[test]
fn summation_orders_are_pinned() {
    let names: Vec<&str> = fprev::registered().iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        ["fprev_testlib::four_lane_dot", "fprev_testlib::sequential"]
    );
    let summary = fprev::check_registered().unwrap();
    println!("{summary}");
    assert_eq!(summary.orders.len(), 3);
    let four = summary
        .orders
        .iter()
        .find(|o| o.name.ends_with("dot"))
        .unwrap();
    assert_eq!(
        four.tree.to_string(),
        "(((((0+4)+8)+12)+(((1+5)+9)+13))+((((2+6)+10)+14)+(((3+7)+11)+15)))"
            .parse::<fprev::SumTree>()
            .unwrap()
            .to_string()
    );
}

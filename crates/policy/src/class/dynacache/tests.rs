//! Dynacache's spec and rounds on hand-made class views.

use super::*;
use crate::class::tests::{input, view};
use crate::class::{by_name, ClassPolicySpec, MoveRule};
use mrcache_engine::ClassId;

/// A curve over `0..=n` pages: miss ratio 1 at 0 pages, falling by `step` a page to `floor`.
fn falling(n: usize, step: f64, floor: f64) -> Vec<f64> {
    (0..=n)
        .map(|k| (1.0 - step * k as f64).max(floor))
        .collect()
}

#[test]
fn spec_parses_prints_and_refuses() {
    let spec: ClassPolicySpec = "dynacache".parse().unwrap();
    assert_eq!(spec, ClassPolicySpec::Dynacache(DynacacheParams::default()));
    assert_eq!(spec.to_string(), "dynacache");
    let text =
        "dynacache:interval=5000,period=0,moves=7,threshold=0.05,min_entropy=1.5,objective=bytes,guard=model";
    let spec: ClassPolicySpec = text.parse().unwrap();
    assert_eq!(spec.to_string(), text);
    assert_eq!(spec.to_string().parse::<ClassPolicySpec>().unwrap(), spec);
    assert_eq!(
        spec.build().describe(),
        "dynacache:interval=5000,period=0,moves=7,threshold=0.05,min_entropy=1.5,objective=bytes,guard=model"
    );
    assert_eq!(
        by_name("dynacache").unwrap().describe(),
        "dynacache:interval=1000000,period=300,moves=50,threshold=0.01,min_entropy=0.3,objective=hits,guard=noise"
    );
    for (bad, says) in [
        ("dynacache:interval=0", "interval must be at least 1"),
        ("dynacache:moves=0", "moves >= 1"),
        ("dynacache:threshold=1", "threshold < 1"),
        ("dynacache:min_entropy=-1", "min_entropy"),
        ("dynacache:min_entropy=nan", "min_entropy"),
        ("dynacache:objective=latency", "`objective`"),
        ("dynacache:guard=none", "`guard`"),
        ("dynacache:window=3", "no parameter `window`"),
    ] {
        let err = bad.parse::<ClassPolicySpec>().unwrap_err().to_string();
        assert!(
            err.contains("dynacache") && err.contains(says),
            "{bad}: {err}"
        );
    }
}

#[test]
fn gives_pages_where_they_save_most_hits() {
    // Class 1 gains 20% of its requests a page up to 5 pages; class 2 only 2% a page. Demand filling
    // left 4 pages each (8 in all): the optimum takes class 1 to 5 and leaves class 2 with 3.
    let classes = [
        view(1, 4, 1000, 200, 0, 5, Some(falling(8, 0.2, 0.0))),
        view(2, 4, 1000, 920, 0, 5, Some(falling(8, 0.02, 0.0))),
    ];
    let mut p = by_name("dynacache:threshold=0").unwrap();
    let round = p.round(&input(&classes));
    assert_eq!(round.moves.len(), 1);
    let m = round.moves[0];
    assert_eq!((m.src, m.dst, m.pages), (ClassId(2), Some(ClassId(1)), 1));
    assert_eq!(m.rule, MoveRule::Curve);
    // Predicted: class 1 at 5 pages misses 0, class 2 at 3 pages 0.94.
    let predicted = round.predicted_miss_ratio.unwrap();
    assert!((predicted - 0.47).abs() < 1e-9, "{predicted}");
}

#[test]
fn weighted_hits_favour_the_large_class() {
    // Same gain per page in hits; objective=bytes weighs class 2's hits by its larger chunk.
    let mut small = view(1, 4, 1000, 500, 0, 5, Some(falling(8, 0.1, 0.0)));
    let mut large = view(2, 4, 1000, 500, 0, 5, Some(falling(8, 0.1, 0.0)));
    small.snapshot.chunk_size_bytes = 96;
    large.snapshot.chunk_size_bytes = 4096;
    let classes = [small, large];
    let mut hits = by_name("dynacache:threshold=0").unwrap();
    assert!(
        hits.round(&input(&classes)).moves.is_empty(),
        "a tie keeps the allocation"
    );
    let mut bytes = by_name("dynacache:threshold=0,objective=bytes").unwrap();
    let round = bytes.round(&input(&classes));
    let moved: usize = round.moves.iter().map(|m| m.pages).sum();
    assert_eq!(moved, 3, "{round:?}");
    assert!(round.moves.iter().all(|m| m.dst == Some(ClassId(2))));
}

#[test]
fn low_entropy_applications_are_left_alone() {
    // All misses in class 1: entropy 0, below any positive min_entropy. The curves would move a page.
    let classes = [
        view(1, 4, 1000, 200, 0, 5, Some(falling(8, 0.2, 0.0))),
        view(2, 4, 1000, 0, 0, 5, Some(falling(8, 0.02, 0.0))),
    ];
    let spec: ClassPolicySpec = "dynacache:threshold=0".parse().unwrap();
    let ClassPolicySpec::Dynacache(params) = spec else {
        unreachable!()
    };
    let mut p = params.build();
    assert!(!p.wants_curves(&classes));
    assert!(p.round(&input(&classes)).moves.is_empty());
    assert_eq!(p.last_entropy(), Some(0.0));
    assert_eq!(p.rounds(), (0, 1));
    // With the rule off (min_entropy=0) the same window is optimised.
    let mut p = DynacacheParams {
        min_entropy: Some(0.0),
        threshold: Some(0.0),
        ..DynacacheParams::default()
    }
    .build();
    assert!(p.wants_curves(&classes));
    assert_eq!(p.round(&input(&classes)).moves.len(), 1);
    assert_eq!(p.rounds(), (1, 0));
}

#[test]
fn stable_once_optimal_and_silent_on_noise() {
    // At the optimum already: nothing moves, round after round.
    let classes = [
        view(1, 5, 1000, 0, 0, 5, Some(falling(8, 0.2, 0.0))),
        view(2, 3, 1000, 940, 0, 5, Some(falling(8, 0.02, 0.0))),
    ];
    let mut p = by_name("dynacache:threshold=0").unwrap();
    for _ in 0..3 {
        assert!(p.round(&input(&classes)).moves.is_empty());
    }
    // A gain smaller than the sampling noise (1% sampling, 200 requests: 2 sampled... enough to be
    // trusted at 20 samples only with 2,000 requests) moves nothing.
    let mut a = view(1, 4, 2000, 1000, 0, 5, Some(falling(8, 0.101, 0.0)));
    let mut b = view(2, 4, 2000, 1000, 0, 5, Some(falling(8, 0.1, 0.0)));
    a.curve_sampling_rate = 0.01;
    b.curve_sampling_rate = 0.01;
    let noisy = [a, b];
    let mut p = by_name("dynacache:threshold=0,min_entropy=0").unwrap();
    assert!(p.round(&input(&noisy)).moves.is_empty());
}

#[test]
fn bounded_moves_idle_classes_and_untrusted_curves() {
    // Class 3 was unused in the window: its 6 pages go (rule Idle), at most `moves` a round. Class 2
    // has no curve: it keeps its pages.
    let classes = [
        view(1, 2, 1000, 800, 0, 5, Some(falling(10, 0.1, 0.0))),
        view(2, 2, 1000, 500, 0, 5, None),
        view(3, 6, 0, 0, 0, 5, Some(vec![1.0; 11])),
    ];
    let mut p = by_name("dynacache:threshold=0,moves=4").unwrap();
    let round = p.round(&input(&classes));
    let moved: usize = round.moves.iter().map(|m| m.pages).sum();
    assert_eq!(moved, 4);
    for m in &round.moves {
        assert_eq!(
            (m.src, m.dst, m.rule),
            (ClassId(3), Some(ClassId(1)), MoveRule::Idle)
        );
    }
    // Still filling memory: nothing moves.
    let mut filling = input(&classes);
    filling.page_limit += 1;
    assert!(p.round(&filling).moves.is_empty());
}

#[test]
fn due_every_interval_or_period() {
    let p = by_name("dynacache:interval=1000,period=60").unwrap();
    let at = |accesses, seconds| Progress {
        accesses,
        misses: 0,
        seconds,
    };
    assert!(!p.due(&at(999, 0)));
    assert!(p.due(&at(1000, 0)));
    assert!(!p.due(&at(10, 61)));
    assert!(p.due(&at(1000, 61)));
    let p = by_name("dynacache:interval=100000,period=60").unwrap();
    assert!(p.due(&at(10_000, 60)));
    assert!(!p.due(&at(9_999, 60)));
}

#[test]
fn model_guard_refuses_plans_the_curves_cannot_back() {
    // The curves say class 1's fifth page saves 200 misses, but at the allocation that served the
    // window they predicted 200 misses for class 1 where 600 were observed: an error of 400, more than
    // the gain. `guard=noise` moves; `guard=model` does not.
    let classes = [
        view(1, 4, 1000, 600, 0, 5, Some(falling(8, 0.2, 0.0))),
        view(2, 4, 1000, 920, 0, 5, Some(falling(8, 0.02, 0.0))),
    ];
    let mut noise = by_name("dynacache:threshold=0").unwrap();
    assert_eq!(noise.round(&input(&classes)).moves.len(), 1);
    let mut model = by_name("dynacache:threshold=0,guard=model").unwrap();
    assert!(model.round(&input(&classes)).moves.is_empty());
    // Curves that reproduce the window: the same plan passes the model guard.
    let classes = [
        view(1, 4, 1000, 200, 0, 5, Some(falling(8, 0.2, 0.0))),
        view(2, 4, 1000, 920, 0, 5, Some(falling(8, 0.02, 0.0))),
    ];
    assert_eq!(model.round(&input(&classes)).moves.len(), 1);
}

use super::*;
use syn::parse_quote;

fn owned(body: syn::Block) -> (Vec<String>, Vec<String>) {
    let exits = super::super::reorderable::exits_early(None, &body);
    let pat: Pat = parse_quote!(i);
    let p = plan(
        Some(&pat),
        None,
        None,
        &body,
        exits,
        &HashSet::new(),
        &BTreeMap::new(),
    );
    let reasons = p.left_alone.into_iter().map(|(_, r)| r).collect();
    (p.reductions.into_keys().collect(), reasons)
}

#[test]
fn pure_reductions_are_owned() {
    assert_eq!(
        owned(parse_quote!({
            s += x[i];
        }))
        .0,
        ["s"]
    );
    assert_eq!(
        owned(parse_quote!({
            s = s + x[i] * y[i];
        }))
        .0,
        ["s"]
    );
    assert_eq!(
        owned(parse_quote!({
            s = x[i] + s;
        }))
        .0,
        ["s"]
    );
    assert_eq!(
        owned(parse_quote!({
            if x[i] > 0.0 {
                s -= x[i];
            }
        }))
        .0,
        ["s"]
    );
    assert_eq!(
        owned(parse_quote!({
            c[r * n + k] += a[i];
        }))
        .0,
        ["c[r*n+k]"]
    );
    assert_eq!(
        owned(parse_quote!({
            self.acc += a[i];
        }))
        .0,
        ["self.acc"]
    );
    assert_eq!(
        owned(parse_quote!({
            *out += a[i];
            t += 1.0;
        }))
        .0,
        ["*out", "t"]
    );
    assert_eq!(
        owned(parse_quote!({
            for j in 0..m {
                s += a[i * m + j];
            }
        }))
        .0,
        ["s"]
    );
}

#[test]
fn integer_accumulators_are_left_alone() {
    for (body, key) in [
        (
            parse_quote!({
                count += 1;
            }),
            "count",
        ),
        (
            parse_quote!({
                if x[i] < 0.0 {
                    neg = neg + 1usize;
                }
            }),
            "neg",
        ),
        (
            parse_quote!({
                hits -= -2;
            }),
            "hits",
        ),
        (
            parse_quote!({
                total += (x[i] as i64);
            }),
            "total",
        ),
        (
            parse_quote!({
                c[k] += 1;
                c[k] += i as u32;
            }),
            "c[k]",
        ),
    ] {
        let (owned, left) = owned(body);
        assert!(owned.is_empty(), "{key}: {owned:?}");
        assert_eq!(left.len(), 1, "{key}: {left:?}");
        assert!(
            left[0].starts_with("integer accumulator"),
            "{key}: {left:?}"
        );
        assert!(left[0].contains(&format!("`{key}`")), "{key}: {left:?}");
    }
    // A float literal, a float suffix, a float cast or one non-integer term: a
    // reduction as before.
    for body in [
        parse_quote!({
            s += 1.0;
        }),
        parse_quote!({
            s += 1f64;
        }),
        parse_quote!({
            s += i as f64;
        }),
        parse_quote!({
            s += 1;
            s += x[i];
        }),
        parse_quote!({
            s += T::one();
        }),
    ] {
        assert_eq!(owned(body).0, ["s"]);
    }
}

#[test]
fn order_carrying_loops_are_left_alone() {
    for body in [
        parse_quote!({
            s += x[i];
            out[i] = s;
        }),
        parse_quote!({
            s += x[i];
            println!("{}", s);
        }),
        parse_quote!({
            s += x[i];
            println!("{s:.3}");
        }),
        parse_quote!({
            s = s * 0.5 + x[i];
        }),
        parse_quote!({
            s += s * x[i];
        }),
        parse_quote!({
            c[i] += x[i];
        }),
        parse_quote!({
            a[k] += a[k - 1];
        }),
        parse_quote!({
            s += x[i];
            if s > 1.0 {
                return;
            }
        }),
        parse_quote!({
            s += x[i];
            f(&mut s);
        }),
        parse_quote!({
            let g = || s += 1.0;
            g();
        }),
        parse_quote!({
            c[j] += x[i];
            j += 1;
        }),
        parse_quote!({
            c[idx()] += x[i];
        }),
        parse_quote!({
            TOTAL += x[i];
        }),
        parse_quote!({
            s += x[i];
            s.push(1.0);
        }),
    ] {
        let (owned, why) = owned(body);
        assert!(owned.is_empty(), "{owned:?}");
        let _ = why;
    }
    let (_, why) = owned(parse_quote!({
        s += x[i];
        out[i] = s;
    }));
    assert_eq!(why, ["order-carrying: reads `s` besides adding to `s`"]);
}

/// The plan of a loop body with no pattern, iterable or condition of its own.
fn bare_plan(body: &syn::Block) -> LoopPlan {
    plan(
        None,
        None,
        None,
        body,
        false,
        &HashSet::new(),
        &BTreeMap::new(),
    )
}

fn keyed(body: syn::Block) -> Vec<(Vec<String>, String)> {
    let p = bare_plan(&body);
    p.keyed.into_iter().map(|k| (k.keys, k.template)).collect()
}

#[test]
fn elements_of_one_array_are_a_keyed_reduction() {
    // Lanes: two places of one array, keyed by their values.
    let lanes: syn::Block = parse_quote!({
        acc[0] += x[2 * i];
        acc[1] += x[2 * i + 1];
    });
    assert_eq!(
        keyed(lanes),
        [(
            vec!["acc[0]".to_string(), "acc[1]".to_string()],
            "acc[_]".to_string()
        )]
    );
    // Column sums, centroids, a gradient through an element loop.
    for (body, keys, template) in [
        (
            parse_quote!({
                for j in 0..p {
                    acc[j] += x[i][j];
                }
            }),
            vec!["acc[j]"],
            "acc[_]",
        ),
        (
            parse_quote!({
                for j in 0..p {
                    centroids[label[i]][j] += x[i][j];
                }
            }),
            vec!["centroids[label[i]][j]"],
            "centroids[_][_]",
        ),
        (
            parse_quote!({
                for (j, g_j) in g.iter_mut().enumerate() {
                    *g_j -= d[i] * x[i][j];
                }
                g[p] -= d[i];
            }),
            vec!["*g_j", "g[p]"],
            "g[_]",
        ),
    ] {
        let keys: Vec<String> = keys.into_iter().map(String::from).collect();
        assert_eq!(keyed(body), [(keys, template.to_string())]);
    }
    // Read besides its updates: order-carrying, never keyed.
    for body in [
        parse_quote!({
            acc[0] += x[i];
            acc[1] += acc[0];
        }),
        parse_quote!({
            for j in 0..p {
                acc[j] += x[i][j];
                out[j] = acc[j];
            }
        }),
        parse_quote!({
            for (j, g_j) in g.iter_mut().enumerate() {
                *g_j -= d[i] * x[i][j];
                y[j] = *g_j;
            }
        }),
        parse_quote!({
            for (j, g_j) in g.iter_mut().enumerate() {
                *g_j -= d[i] * x[i][j];
            }
            g[p] -= g[0];
        }),
    ] {
        let p = bare_plan(&body);
        assert!(p.keyed.is_empty() && p.reductions.is_empty());
        assert!(!p.order_carrying.is_empty(), "{:?}", p.left_alone);
    }
}

#[test]
fn fields_of_self_are_roots_of_their_own() {
    // An SMO gradient: `self.gradient[i]` over `j`, the term reads `self.alpha`.
    let (o, why) = owned(parse_quote!({
        if self.alpha[i].free_floating() {
            self.gradient[k] += self.alpha[i].val() * dist[i];
        }
    }));
    assert_eq!((o, why.len()), (vec!["self.gradient[k]".to_string()], 0));
    let (o, _) = owned(parse_quote!({
        self.acc += x[i];
        self.count += 1;
    }));
    assert_eq!(o, ["self.acc"]);
    // `self` as a whole, or the field itself, read in the loop: left alone.
    for body in [
        parse_quote!({
            self.gradient[k] += x[i] * self.scale();
        }),
        parse_quote!({
            self.gradient[k] += x[i];
            self.report(i);
        }),
        parse_quote!({
            self.gradient[k] += x[i];
            y[i] = self.gradient[k];
        }),
        parse_quote!({
            self.gradient[self.k] += x[i];
            self.k += 1;
        }),
    ] {
        let (o, why) = owned(body);
        assert!(o.is_empty(), "{why:?}");
    }
}

#[test]
fn variables_declared_inside_belong_to_the_inner_loop() {
    let (o, why) = owned(parse_quote!({
        let mut p = 0.0;
        for x in r {
            p += x;
        }
        s += p;
    }));
    assert_eq!((o, why.len()), (vec!["s".to_string()], 0));
}

/// Every key of `body` the loop leaves alone, with its reason kind, and whether it owns
/// any reduction.
fn left_alone(body: &syn::Block) -> (Vec<(String, ReasonKind)>, bool) {
    let p = bare_plan(body);
    let owns = !p.reductions.is_empty() || !p.keyed.is_empty();
    let mut kinds: Vec<(String, ReasonKind)> = p
        .left_alone
        .into_iter()
        .map(|(k, r)| (r.split('`').nth(1).unwrap_or_default().to_string(), k))
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    (kinds, owns)
}

#[test]
fn parts_of_an_element_loops_elements_are_updates_of_the_array() {
    // SMO: the gradients of every vector updated once per outer iteration, which reads
    // them (`self.sv[i].grad[0]`, and `self` as a whole): their order is the meaning.
    let smo: syn::Block = parse_quote!({
        let g = self.sv[i].grad[0] - self.sv[j].grad[1];
        for v in self.sv.iter_mut() {
            v.grad[0] -= si * k1[v.index] * g;
            v.grad[1] += sj * k2[v.index] * g;
        }
        self.find_min_max_gradient();
    });
    let (kinds, owns) = left_alone(&smo);
    assert!(!owns);
    assert_eq!(
        kinds,
        [
            ("self.sv".to_string(), ReasonKind::OrderCarrying),
            ("self.sv".to_string(), ReasonKind::OrderCarrying)
        ]
    );
    assert_eq!(
        bare_plan(&smo)
            .order_carrying
            .into_iter()
            .collect::<Vec<_>>(),
        ["v.grad[0]", "v.grad[1]"]
    );
    // A sum per element through a field, read nowhere else: left alone, and said so.
    let per_element: syn::Block = parse_quote!({
        for (_, c) in centroids.iter_mut().enumerate() {
            c.mass += w[i];
        }
    });
    assert_eq!(
        left_alone(&per_element),
        (vec![("c.mass".to_string(), ReasonKind::ElementPart)], false)
    );
    let by_ref: syn::Block = parse_quote!({
        for c in &mut centroids {
            c.mass += w[i];
        }
    });
    assert_eq!(
        left_alone(&by_ref),
        (vec![("c.mass".to_string(), ReasonKind::ElementPart)], false)
    );
    // A matrix-vector product by columns (smartcore's lazy normalization): each
    // `out` element a sum over the columns, its element bound through a `zip`.
    let by_columns: syn::Block = parse_quote!({
        let column = a.get_col(i);
        for (&raw, result) in column.iterator(0).zip(out.iter_mut()) {
            *result += raw * v[i];
        }
    });
    assert_eq!(
        left_alone(&by_columns),
        (
            vec![("*result".to_string(), ReasonKind::ElementPart)],
            false
        )
    );
    assert!(bare_plan(&by_columns).left_alone[0]
        .1
        .contains("`*result` is an element of `out` bound by an inner loop without its position"));
}

#[test]
fn an_element_loop_that_rescales_its_array_reads_it() {
    // `xs[0]` is a recurrence here: every round doubles the whole array.
    let body: syn::Block = parse_quote!({
        xs[0] += t[i];
        for v in xs.iter_mut() {
            *v *= 2.0;
        }
    });
    let (kinds, owns) = left_alone(&body);
    assert!(!owns, "{kinds:?}");
    assert_eq!(kinds, [("xs".to_string(), ReasonKind::OrderCarrying)]);
    let enumerated: syn::Block = parse_quote!({
        xs[0] += t[i];
        for (j, v) in xs.iter_mut().enumerate() {
            *v *= w[j];
        }
    });
    assert_eq!(
        left_alone(&enumerated),
        (vec![("xs".to_string(), ReasonKind::OrderCarrying)], false)
    );
    // Only updated by the element loop, the array is a keyed reduction as before.
    let gradient: syn::Block = parse_quote!({
        for (j, g_j) in g.iter_mut().enumerate() {
            *g_j -= d[i] * x[j];
        }
        g[p] -= d[i];
    });
    assert!(bare_plan(&gradient).keyed.len() == 1);
}

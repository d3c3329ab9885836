//! A frame of chain counters as generated code holds it: which counters it holds
//! ([`Scope`]), the local that holds them, and the code that declares a frame and merges
//! it at the function's exits.

use std::collections::{BTreeSet, HashMap, HashSet};

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use super::ChainSiteKind;

/// The counters of one frame: the function's, or a closure's own (so that a closure
/// keeps its `Fn`/`Sync`-ness: it never captures the function's counters for variables
/// and places of its own). The counters only this frame uses sit in one
/// `Frame` value, `__fprev_frame`, in slots numbered in the order they are first used
/// (variables and places apart); the counter of a variable some closure uses is a frame
/// of its own (`__fprev_v<k>`), so a closure captures exactly the counters of the
/// variables it captures, in every edition (an edition-2018 closure captures a whole
/// local, and a shared frame would conflict with every other use).
pub struct Scope {
    /// Names declared inside (None: the function, which owns every other name).
    pub(super) declared: Option<HashSet<String>>,
    /// The frame as generated code reaches it: `__fprev_frame`, or `__fprev_frame.0`
    /// when it merges on drop.
    frame: TokenStream,
    /// The site of each variable slot, in slot order.
    pub vars: Vec<usize>,
    /// The site of each place slot, in slot order.
    pub places: Vec<usize>,
    slots: HashMap<usize, usize>,
    /// Variable sites of this frame counted in locals of their own.
    pub captured: BTreeSet<usize>,
}

/// A counter as generated code reaches it: the frame holding it and its slot there.
pub(super) struct Counter {
    pub(super) frame: TokenStream,
    pub(super) slot: proc_macro2::Literal,
    /// Which frame: `None` for the innermost scope's, `Some(k)` for variable `k`'s own
    /// (a variable captured by a closure).
    pub(super) owner: Option<usize>,
}

impl Scope {
    /// A frame that merges at the function's exits, or, with `on_drop`, when dropped.
    pub fn new(declared: Option<HashSet<String>>, on_drop: bool) -> Scope {
        let f = frame_ident();
        Scope {
            declared,
            frame: if on_drop { quote!(#f.0) } else { quote!(#f) },
            vars: Vec::new(),
            places: Vec::new(),
            slots: HashMap::new(),
            captured: BTreeSet::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty() && self.places.is_empty() && self.captured.is_empty()
    }

    /// Site `k`'s counter in this frame, given a slot when first used.
    pub(super) fn member(&mut self, k: usize, kind: ChainSiteKind) -> Counter {
        let list = match kind {
            ChainSiteKind::Place => &mut self.places,
            _ => &mut self.vars,
        };
        let slot = *self.slots.entry(k).or_insert_with(|| {
            list.push(k);
            list.len() - 1
        });
        Counter {
            frame: self.frame.clone(),
            slot: proc_macro2::Literal::usize_unsuffixed(slot),
            owner: None,
        }
    }
}

/// The local holding a frame's counters.
pub fn frame_ident() -> syn::Ident {
    syn::Ident::new("__fprev_frame", Span::mixed_site())
}

/// The local counting variable site `k` when a closure uses it.
pub fn var_counter(k: usize) -> syn::Ident {
    syn::Ident::new(&format!("__fprev_v{k}"), Span::mixed_site())
}

/// The statements that leave the function with `value` when its frame is merged at
/// its exits (the end of the body and each `return`): `value` bound to the return type
/// `ret` first, as the plain code computes it, then the frame merged, then the value.
pub fn exit_with(krate: &TokenStream, ret: &TokenStream, value: TokenStream) -> TokenStream {
    let (f, v) = (
        frame_ident(),
        quote_spanned!(Span::mixed_site()=> __fprev_ret),
    );
    quote! {
        #[allow(unused_variables)]
        let #v: #ret = #value;
        #[allow(unreachable_code)]
        #krate::__private::chains::Finish::finish(&mut #f);
        #v
    }
}

/// A frame's counters: the counters only this frame uses in one `Frame`, in the local
/// `__fprev_frame`, and a frame of its own for each counter a closure uses (see
/// [`Scope`]), merged into its site when dropped. The frame is merged at the function's
/// exits, written out (see [`exits`](super::super::exits)), or, with `on_drop`, when it drops
/// (also on `?` and panic).
///
/// One local rather than one per site: the borrow checker traces every local that
/// needs dropping through the whole function, so a local per counter would make a long
/// function's build several times slower than its plain one. One value built by one
/// call rather than a struct with a field per counter: a struct would cost a call per
/// counter to build it and another to merge it, compiler work that grows with the
/// number of sites.
pub fn frame_decl(
    krate: &TokenStream,
    statics: &syn::Ident,
    scope: &Scope,
    on_drop: bool,
) -> TokenStream {
    let chains = quote!(#krate::__private::chains);
    let f = frame_ident();
    let (vars, places) = (&scope.vars, &scope.places);
    // An empty frame (a function whose `return`s merge it, with no site of its own)
    // names no table: the function has none.
    let table = if vars.is_empty() && places.is_empty() {
        quote!(&[])
    } else {
        quote!(&#statics)
    };
    let frame = quote!(#chains::Frame::new(#table, &[#(#vars),*], &[#(#places),*]));
    let frame = if on_drop {
        quote!(#chains::OnDrop(#frame))
    } else {
        frame
    };
    let captured = scope.captured.iter().map(|&k| {
        let v = var_counter(k);
        quote! {
            #[allow(unused_mut, unused_variables)]
            let mut #v = #chains::OnDrop(#chains::Frame::new(&#statics, &[#k], &[]));
        }
    });
    quote! {
        #[allow(unused_mut, unused_variables)]
        let mut #f = #frame;
        #(#captured)*
    }
}

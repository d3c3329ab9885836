//! Parsing of `#[scramble(...)]`: on the function, and the per-loop markers.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::{Attribute, LitStr, Path};

pub(crate) mod kw {
    syn::custom_keyword!(outer);
    syn::custom_keyword!(all);
    syn::custom_keyword!(force);
    syn::custom_keyword!(skip);
    syn::custom_keyword!(shuffle);
    syn::custom_keyword!(loops);
}

/// Which `for` loops the function declares order-free (whole-loop scrambling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OrderFreeLoops {
    /// `outer`: only loops not nested in another `for` loop.
    Outer,
    /// `loops` (or `all`): every loop of a supported form.
    All,
}

/// The options of `#[scramble(...)]` on a function.
pub(crate) struct ScrambleArgs {
    /// Whole-loop scrambling declared on the function; `None` (the default): only
    /// reductions are reassociated, loops keep their order.
    pub loops: Option<OrderFreeLoops>,
    /// A shuffle name checked against [`SHUFFLES`], with its span.
    pub shuffle: Option<(String, Span)>,
    /// Rewrite loops with early exits too.
    pub force: bool,
    /// Path of the fprev crate (`crate = "..."`), `::fprev` by default.
    pub krate: Path,
    /// `chains`: the function is also compiled with `#[accumulator]`'s chain counting,
    /// which runs instead in a process started with `FPREV_CHAINS=1`.
    pub chains: bool,
}

/// Shuffle names accepted by `shuffle = "..."` and the runtime variant each names.
pub(crate) const SHUFFLES: &[(&str, &str)] = &[
    ("fisher-yates", "FisherYates"),
    ("sattolo", "Sattolo"),
    ("identity", "Identity"),
];

const FN_OPTIONS: &str = "`loops`, `outer`, `force`, `chains`, `shuffle = \"fisher-yates\" | \"sattolo\" | \"identity\"`, `crate = \"path\"`";

impl ScrambleArgs {
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<ScrambleArgs> {
        let mut args = ScrambleArgs {
            loops: None,
            shuffle: None,
            force: false,
            krate: syn::parse_quote!(::fprev),
            chains: false,
        };
        let mut loops_seen: Option<Span> = None;
        let parser = syn::meta::parser(|meta| {
            if meta.path.is_ident("outer")
                || meta.path.is_ident("all")
                || meta.path.is_ident("loops")
            {
                let span = syn::spanned::Spanned::span(&meta.path);
                if loops_seen.replace(span).is_some() {
                    return Err(meta.error("`loops` / `outer` / `all` given twice: keep one"));
                }
                args.loops = Some(if meta.path.is_ident("outer") {
                    OrderFreeLoops::Outer
                } else {
                    OrderFreeLoops::All
                });
                Ok(())
            } else if meta.path.is_ident("force") {
                args.force = true;
                Ok(())
            } else if meta.path.is_ident("chains") {
                args.chains = true;
                Ok(())
            } else if meta.path.is_ident("shuffle") {
                let lit: LitStr = meta.value()?.parse()?;
                if !SHUFFLES.iter().any(|(name, _)| *name == lit.value()) {
                    return Err(syn::Error::new(
                        lit.span(),
                        format!(
                            "unknown shuffle {:?}: use \"fisher-yates\", \"sattolo\" or \"identity\"",
                            lit.value()
                        ),
                    ));
                }
                args.shuffle = Some((lit.value(), lit.span()));
                Ok(())
            } else if meta.path.is_ident("crate") {
                let lit: LitStr = meta.value()?.parse()?;
                args.krate = lit.parse()?;
                Ok(())
            } else {
                Err(meta.error(format!(
                    "unknown #[scramble] option: expected one of {FN_OPTIONS}"
                )))
            }
        });
        parser.parse2(tokens)?;
        Ok(args)
    }
}

/// What a per-loop `#[scramble(...)]` marker asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Marker {
    /// `#[scramble(skip)]`: keep this loop's order.
    Skip,
    /// `#[scramble(loop)]` (or `force`): the user declares this loop order-free; scramble
    /// its order even if it exits early or carries state.
    Loop,
}

/// Whether `attr` is a per-loop marker (`#[scramble(..)]`, `#[fprev::scramble(..)]`).
pub(crate) fn is_marker(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "scramble")
}

/// Removes the markers from `attrs` and returns what they ask for.
pub(crate) fn take_markers(attrs: &mut Vec<Attribute>) -> syn::Result<Option<Marker>> {
    let mut marker = None;
    let mut result = Ok(());
    attrs.retain(|attr| {
        if !is_marker(attr) {
            return true;
        }
        let parsed = attr.parse_args_with(|input: syn::parse::ParseStream| {
            if input.peek(kw::skip) {
                input.parse::<kw::skip>()?;
                Ok(Marker::Skip)
            } else if input.peek(kw::force) {
                input.parse::<kw::force>()?;
                Ok(Marker::Loop)
            } else if input.peek(syn::Token![loop]) {
                input.parse::<syn::Token![loop]>()?;
                Ok(Marker::Loop)
            } else {
                Err(input.error("on a loop, #[scramble] takes `skip` (keep this loop's order and its reductions' association) or `loop` (declare its iterations order-free and scramble their order)"))
            }
        });
        match parsed {
            Ok(m) => marker = Some(m),
            Err(e) => combine(&mut result, e),
        }
        false
    });
    result.map(|()| marker)
}

/// Adds `e` to the errors collected in `acc`.
pub(crate) fn combine(acc: &mut syn::Result<()>, e: syn::Error) {
    match acc {
        Ok(()) => *acc = Err(e),
        Err(prev) => prev.combine(e),
    }
}

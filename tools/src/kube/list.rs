//! Full and paginated lists of a collection.

use crate::driver::{self, Outcome, Plan};
use crate::jsonscan::ListScan;
use crate::report::Report;
use keel_client::{encode_query_value, KubeClient};
use std::sync::Arc;

/// Items and the continue token of one list page (a JSON `*List`). Counted by a structural
/// scan (`jsonscan`): a full parse of a 100 MB list costs the load generator more CPU than the
/// server spends producing it. (The `list` workload scans each body as it arrives.)
pub fn parse_page(body: &[u8]) -> Result<(u64, Option<String>), String> {
    crate::jsonscan::list_page(body)
}

/// Lists `collection` (e.g. `/api/v1/pods`) in full per operation, or in pages of
/// `page_size` following continue tokens; every object of every page is counted.
pub async fn list(
    c: &KubeClient,
    collection: &str,
    page_size: Option<u64>,
    plan: &Plan,
) -> Result<Report, String> {
    let (c2, coll) = (c.clone(), Arc::<str>::from(collection));
    let pages = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let pages2 = pages.clone();
    let name = if page_size.is_some() {
        "list-paged"
    } else {
        "list"
    };
    let sum = driver::run(name, plan, move |_| {
        let (c, coll, pages) = (c2.clone(), coll.clone(), pages2.clone());
        async move {
            let mut out = Outcome::default();
            let mut cont: Option<String> = None;
            loop {
                let sep = if coll.contains('?') { '&' } else { '?' };
                let path = match (page_size, &cont) {
                    (None, _) => coll.to_string(),
                    (Some(l), None) => format!("{coll}{sep}limit={l}"),
                    (Some(l), Some(t)) => {
                        format!("{coll}{sep}limit={l}&continue={}", encode_query_value(t))
                    }
                };
                let mut scan = ListScan::new();
                out.bytes += c.get_streamed(&path, |chunk| scan.push(chunk)).await?;
                let (n, next) = scan.finish()?;
                out.objects += n;
                pages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match next {
                    Some(t) if page_size.is_some() => cont = Some(t),
                    _ => return Ok(out),
                }
            }
        }
    })
    .await?;
    let mut r = Report::new(name, "kube");
    let objects_per_list = sum.objects.checked_div(sum.ops).unwrap_or(0);
    r.details
        .insert("objects_per_list".into(), objects_per_list.into());
    r.details.insert(
        "pages".into(),
        pages.load(std::sync::atomic::Ordering::Relaxed).into(),
    );
    r.ops.push(sum);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Want = Result<(u64, Option<&'static str>), ()>;

    #[test]
    fn pages_parse() {
        let cases: &[(&str, Want)] = &[
            (
                r#"{"metadata":{"continue":"abc"},"items":[{"a":1},{}]}"#,
                Ok((2, Some("abc"))),
            ),
            (r#"{"metadata":{"continue":""},"items":[]}"#, Ok((0, None))),
            (
                r#"{"kind":"PodList","metadata":{},"items":[{}]}"#,
                Ok((1, None)),
            ),
            (r#"{"items": 3}"#, Err(())),
            ("not json", Err(())),
        ];
        for (body, want) in cases {
            let got = parse_page(body.as_bytes());
            match (got, want) {
                (Ok((n, c)), Ok((wn, wc))) => {
                    assert_eq!((n, c.as_deref()), (*wn, *wc), "{body}")
                }
                (Err(_), Err(())) => {}
                (g, w) => panic!("{body}: got {g:?}, want {w:?}"),
            }
        }
    }
}

//! Every example line in docs/trajectory-format.md parses as what it claims to be, so the
//! document and the code cannot drift apart.

use cosmos_trajectory::event::{EventBody, KNOWN_KINDS};
use cosmos_trajectory::reader::{parse_event, parse_header};
use cosmos_trajectory::wire::WireMessage;

#[test]
fn every_example_in_the_format_document_parses() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/trajectory-format.md"
    ))
    .unwrap();
    let mut in_json = false;
    let mut kinds = Vec::new();
    let mut headers = 0;
    let mut wire = 0;
    for line in doc.lines() {
        match line.trim() {
            "```json" => in_json = true,
            "```" => in_json = false,
            l if in_json && l.contains("\"format\":\"mcp-cosmos-trajectory\"") => {
                parse_header(l.as_bytes()).unwrap_or_else(|e| panic!("{e}: {l}"));
                headers += 1;
            }
            // A proxy session's protocol log, beside the run.
            l if in_json && l.starts_with("{\"t_ms\":") && l.contains("\"dir\":") => {
                serde_json::from_str::<WireMessage>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                wire += 1;
            }
            l if in_json => {
                let event = parse_event(l.as_bytes()).unwrap_or_else(|e| panic!("{e}: {l}"));
                assert!(!matches!(event.body, EventBody::Unknown { .. }), "{l}");
                kinds.push(event.body.kind().to_string());
            }
            _ => {}
        }
    }
    assert_eq!(headers, 1);
    assert!(wire > 0, "no example of a protocol log's line");
    for kind in KNOWN_KINDS {
        assert!(
            kinds.iter().any(|k| k == kind),
            "docs/trajectory-format.md has no example of {kind}"
        );
    }
}

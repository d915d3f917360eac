use super::*;
use combo_testkit::stand_in::{Answer, StandIn};

/// A write is an apply by the peers' field manager carrying the pod's
/// UID; what the API server answers decides whether it landed, is
/// dropped (the pod is gone or replaced) or comes again.
#[tokio::test]
async fn a_write_landed_is_told_from_a_pod_gone_and_from_a_failure() {
    let w = Write {
        key: ("ops".into(), "mesh".into()),
        pod: "p1".into(),
        uid: "uid-p1".into(),
        value: "10.0.0.2,10.0.0.3".into(),
        nodes: "10.0.0.2=node-2,10.0.0.3=node-3".into(),
    };
    let answers = [
        (
            Answer::Json(
                200,
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ops"}}),
            ),
            Outcome::Written,
        ),
        (Answer::status(404, "NotFound"), Outcome::Gone),
        (Answer::status(409, "Conflict"), Outcome::Gone),
        (Answer::status(422, "Invalid"), Outcome::Gone),
        (Answer::status(500, "InternalError"), Outcome::Failed),
        (Answer::status(403, "Forbidden"), Outcome::Failed),
    ];
    for (answer, want) in answers {
        let (client, stand_in) = StandIn::scripted(vec![answer.clone()]);
        assert_eq!(write(client, &w).await, want, "answer {answer:?}");
        let request = &stand_in.requests()[0];
        assert_eq!(request.line(), "PATCH /api/v1/namespaces/ops/pods/p1");
        assert!(
            request.uri.contains("fieldManager=combo-operator%2Fpeers")
                && request.uri.contains("force=true"),
            "{}",
            request.uri
        );
        let body: serde_json::Value = serde_json::from_str(&request.body).unwrap();
        assert_eq!(body["metadata"]["uid"], "uid-p1");
        assert_eq!(
            body["metadata"]["annotations"][keys::ANNOTATION_PEERS],
            "10.0.0.2,10.0.0.3"
        );
        assert_eq!(
            body["metadata"]["annotations"][keys::ANNOTATION_PEER_NODES],
            "10.0.0.2=node-2,10.0.0.3=node-3"
        );
    }
}

// Package admission owns the admission request as the runtime receives it,
// before any decision: how it is served, what of it may be trusted, which
// workspaces' rules it depends on, and whether the webhook knows them. It
// knows nothing of what is decided (package decision) or recorded (package
// index).
//
// # Serving (review.go, server.go)
//
// Admission reviews are served on controller-runtime's webhook server and
// cradmission.Webhook, stricter than they are by themselves: what is not a
// well-formed AdmissionReview is refused as bad before any decision sees it.
//
// # The trust boundary (cluster.go, deletion.go, names.go, path.go)
//
// This is the boundary between what an admission request says and what the
// runtime acts on. Every field of a request (names, namespaces, annotations,
// labels, the intents recorded on objects) is written by a client until it
// is checked here; the runtime reads a request's logical cluster only
// through ClusterOf, and builds no URL path from a segment that Segment
// refused (Path calls it for every segment it joins). A value that cannot be
// an object's name names no object: a reference holding one references
// nothing, and records nothing. A DELETE reaches the protection decision
// only as a Deletion (DeletionOf): the deleted object's name, namespace and
// logical cluster, checked once. TestBoundaryHasOneDoor keeps it so.
//
// # Scope (scope.go)
//
// A Scope names the workspaces whose rules a request's decision depends on.
// The controller knows them when it writes a webhook configuration and
// appends them to the configuration's URL; the webhook reads them back from
// the request's path, so that it can decide a request once it has read the
// rules of those workspaces, even while another shard cannot be read. The
// URL of a configuration that names them is
//
//	<endpoint URL>/clusters/<cluster>,<cluster>,…
//
// in the order Clusters gives. A URL without that suffix (written by an
// older controller, or naming more than MaxClusters) names none: the
// webhook then decides only once it has read every shard's rules.
//
// # Readiness (readiness.go)
//
// Both admission endpoints (package decision and package index) refuse a
// request, to be retried, while the webhook does not know every rule that
// can matter to it: a decision or an index label computed without a rule
// would be wrong.
package admission

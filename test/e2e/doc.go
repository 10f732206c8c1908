// Package e2e tests the runtime end to end on a real kcp (two shards,
// built from the Go module proxy), with the controller and the webhook
// running as processes: the attack catalogue, the outages, the invariant
// under load, and the benchmarks the guides report. Set TF_ACC=1 or
// DEPCTRL_INTEGRATION=1 to run them.
package e2e

// Package env starts and describes the real kcp installations that the
// integration and acceptance tests, and the local quickstart, run against.
//
// Two topologies exist: a single kcp shard on free loopback ports, and the
// two-shard topology of kcp's sharded-test-server (root shard, second shard,
// cache server and front-proxy). The second uses fixed ports, so at most one
// runs per machine; a file lock serializes its users.
//
// Every process is started in its own process group and watched by a reaper
// that tears the group down when the owning process dies, so a failing,
// panicking or timed-out test leaves nothing running.
//
// A running environment is described by an env.json file. Setting
// DEPCTRL_TEST_ENV to that file (or its directory) makes ForTest attach to it
// instead of starting a new one, so a developer can iterate without waiting
// for kcp to start each time.
package env

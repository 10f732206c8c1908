package env

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
)

var (
	sharedMu  sync.Mutex
	sharedEnv = map[Topology]*Env{}
)

// ForTest returns an environment of at least the given topology for a test.
// With DEPCTRL_TEST_ENV set it attaches to that environment (a two-shard
// environment serves single-shard tests too). Otherwise it starts one, shared
// by all tests of the package and stopped by RunTests.
func ForTest(t testing.TB, topology Topology) *Env {
	t.Helper()
	if p := os.Getenv(AttachVariable); p != "" {
		e, err := attachShared(p)
		if err != nil {
			t.Fatalf("attaching to the environment named by %s: %v", AttachVariable, err)
		}
		if topology == TwoShards && e.Topology != TwoShards {
			t.Fatalf("this test needs the %s topology but %s names a %s environment", TwoShards, AttachVariable, e.Topology)
		}
		return e
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	e := sharedEnvFor(t, topology)
	t.Cleanup(func() {
		if t.Failed() {
			if s := e.ProxyErrors(20); s != "" {
				t.Logf("the front-proxy could not carry these requests to a shard:\n%s", s)
			}
		}
	})
	return e
}

// sharedEnvFor returns the package's environment of topology, starting it
// on first use; sharedMu is held.
func sharedEnvFor(t testing.TB, topology Topology) *Env {
	t.Helper()
	if e := sharedEnv[topology]; e != nil {
		return e
	}
	// Only one two-shard topology fits on a machine: a package that needs
	// it uses it for its single-shard tests as well.
	if topology == SingleShard && sharedEnv[TwoShards] != nil {
		return sharedEnv[TwoShards]
	}
	t.Logf("starting a %s kcp environment ...", topology)
	e, err := Start(context.Background(), topology, Options{})
	if err != nil {
		t.Fatalf("starting a %s kcp environment: %v", topology, err)
	}
	t.Logf("kcp %s environment ready at %s (dir %s)", topology, e.FrontProxyURL, e.Dir)
	sharedEnv[topology] = e
	return e
}

var attached struct {
	sync.Mutex
	env *Env
}

func attachShared(path string) (*Env, error) {
	attached.Lock()
	defer attached.Unlock()
	if attached.env != nil {
		return attached.env, nil
	}
	e, err := Attach(path)
	if err != nil {
		return nil, err
	}
	attached.env = e
	return e, nil
}

// RunTests runs the package's tests and then stops every environment that
// ForTest started. Call it from TestMain: os.Exit(env.RunTests(m)).
func RunTests(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for topo, e := range sharedEnv {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the %s environment: %v\n", topo, err)
			if code == 0 {
				code = 1
			}
		}
		delete(sharedEnv, topo)
	}
	if err := stopSharedKube(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

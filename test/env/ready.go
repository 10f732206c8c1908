package env

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
)

// ready checks that the front-proxy and every shard answer /readyz and that
// the root workspace serves workspaces.
func (e *Env) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg, err := e.AdminConfig("root")
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/tenancy.kcp.io/v1alpha1/workspaces").DoRaw(ctx); err != nil {
		return fmt.Errorf("listing workspaces in root: %w", err)
	}
	for _, s := range e.Shards {
		scfg, err := e.ShardAdminConfig(s.Name, "system:admin")
		if err != nil {
			return err
		}
		scfg.Host = s.URL
		scs, err := kubernetes.NewForConfig(scfg)
		if err != nil {
			return err
		}
		if _, err := scs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			return fmt.Errorf("shard %s /readyz: %w", s.Name, err)
		}
	}
	return nil
}

// WaitReady waits until the environment answers.
func (e *Env) WaitReady(timeout time.Duration) error {
	ctx := context.Background()
	return waitFor(ctx, timeout, nil, func() bool { return e.ready(ctx) == nil })
}

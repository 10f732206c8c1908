// Command depctrl-testenv starts a local kcp environment and keeps it running
// until it is interrupted, so that tests (DEPCTRL_TEST_ENV) and the quickstart
// can attach to it.
//
//	depctrl-testenv -topology two-shards -dir .env
//	export DEPCTRL_TEST_ENV=$PWD/.env/env.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

func main() {
	topology := flag.String("topology", string(env.TwoShards), "single-shard or two-shards")
	dir := flag.String("dir", "", "directory for the environment's files (default: a temporary directory, removed on exit)")
	keep := flag.Bool("keep-dir", false, "keep the directory after stopping")
	kube := flag.Bool("kube", false, "also start a Kubernetes API server (make kube) to deploy the runtime into")
	timeout := flag.Duration("ready-timeout", 5*time.Minute, "how long to wait for kcp to become ready")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	start := time.Now()
	fmt.Fprintf(os.Stderr, "starting a %s kcp environment ...\n", *topology)
	e, err := env.Start(ctx, env.Topology(*topology), env.Options{Dir: *dir, KeepDir: *keep || *dir != "", ReadyTimeout: *timeout})
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "kcp is ready after %s at %s\n", time.Since(start).Round(time.Second), e.FrontProxyURL)
	if *kube {
		k, err := env.StartKube(ctx, filepath.Join(e.Dir, "kube"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
			_ = e.Stop()
			os.Exit(1)
		}
		e.Kube = k
		if err := e.WriteDescriptor(); err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
			_ = e.Stop()
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "kube-apiserver is ready at %s\n", k.Host)
	}
	fmt.Printf("export %s=%s\n", env.AttachVariable, e.DescriptorPath())
	fmt.Printf("export KUBECONFIG=%s\n", e.AdminKubeconfig)

	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping the kcp environment ...")
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

package env

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
)

// StartSingleShard starts one kcp process on free loopback ports.
func StartSingleShard(ctx context.Context, opts Options) (_ *Env, retErr error) {
	kcpBin, err := binary("kcp", "kcp")
	if err != nil {
		return nil, err
	}
	removeDir, err := opts.prepare("depctrl-kcp-")
	if err != nil {
		return nil, err
	}
	defer undoOnError(&retErr, removeDir)

	// kcp start has no client CA of its own; ours lets identities
	// authenticate with certificates, as they do through a front-proxy.
	caCert, caKey, err := certs.NewCA("depctrl-test-client-ca", certValidity)
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: opts.Dir, Topology: SingleShard,
		ClientCACert: filepath.Join(opts.Dir, "client-ca.crt"),
		ClientCAKey:  filepath.Join(opts.Dir, "client-ca.key"),
	}
	for file, data := range map[string][]byte{e.ClientCACert: caCert, e.ClientCAKey: caKey} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(opts.Dir, ".kcp")
	logFile := filepath.Join(opts.Dir, "kcp.log")
	e.LogFiles = []string{logFile}
	e.FrontProxyURL = "https://127.0.0.1:" + strconv.Itoa(ports[0])
	args := []string{"start",
		"--root-directory", root,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[0]),
		"--embedded-etcd-client-port", strconv.Itoa(ports[1]),
		"--embedded-etcd-peer-port", strconv.Itoa(ports[2]),
		"--client-ca-file", e.ClientCACert,
	}
	p, err := StartProcess("kcp", kcpBin, args, opts.Dir, logFile)
	if err != nil {
		return nil, err
	}
	e.stop = func() error {
		err := p.Stop(20 * time.Second)
		removeDir()
		return err
	}
	admin := filepath.Join(root, "admin.kubeconfig")
	e.restart = func(ctx context.Context) error {
		before, err := os.ReadFile(admin)
		if err != nil {
			return err
		}
		if err := p.Stop(20 * time.Second); err != nil {
			return fmt.Errorf("stopping kcp: %w", err)
		}
		// Same root directory and ports: the same etcd data, serving
		// certificate and shard admin token; kcp-admin's token is new.
		if p, err = StartProcess("kcp", kcpBin, args, opts.Dir, logFile); err != nil {
			return fmt.Errorf("starting kcp again: %w", err)
		}
		if err := waitFor(ctx, opts.ReadyTimeout, p, func() bool {
			now, err := os.ReadFile(admin)
			return err == nil && !bytes.Equal(now, before)
		}); err != nil {
			return fmt.Errorf("waiting for the restarted kcp to write %s: %w", admin, err)
		}
		if err := e.adoptSingleShardKubeconfig(admin); err != nil {
			return err
		}
		if err := waitFor(ctx, opts.ReadyTimeout, p, func() bool { return e.ready(ctx) == nil }); err != nil {
			return fmt.Errorf("waiting for the restarted kcp to become ready: %w (last: %v)", err, e.ready(ctx))
		}
		return nil
	}
	defer e.stopOnError(&retErr)

	if err := waitFor(ctx, opts.ReadyTimeout, p, func() bool { return fileExists(admin) }); err != nil {
		return nil, fmt.Errorf("waiting for kcp to write %s: %w", admin, err)
	}
	if err := e.adoptSingleShardKubeconfig(admin); err != nil {
		return nil, err
	}
	e.Shards = []Shard{{Name: "root", URL: e.FrontProxyURL}}
	if err := e.serve(ctx, opts.ReadyTimeout, p); err != nil {
		return nil, err
	}
	return e, nil
}

// adoptSingleShardKubeconfig takes the serving CA from the kubeconfig kcp
// wrote and keeps that kubeconfig as the admin kubeconfig.
func (e *Env) adoptSingleShardKubeconfig(path string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	ctx, ok := cfg.Contexts["root"]
	if !ok {
		return fmt.Errorf("%s has no context \"root\"", path)
	}
	cfg.CurrentContext = "root"
	cluster := cfg.Clusters[ctx.Cluster]
	if cluster == nil || len(cluster.CertificateAuthorityData) == 0 {
		return fmt.Errorf("%s has no certificate authority for context \"root\"", path)
	}
	e.CAFile = filepath.Join(e.Dir, "serving-ca.crt")
	if err := os.WriteFile(e.CAFile, cluster.CertificateAuthorityData, 0o600); err != nil {
		return err
	}
	e.AdminKubeconfig = filepath.Join(e.Dir, "admin.kubeconfig")
	return clientcmd.WriteToFile(*cfg, e.AdminKubeconfig)
}

// writeShardAdmin issues a system:masters certificate for shard i and writes
// a kubeconfig that talks to that shard directly.
func (e *Env) writeShardAdmin(i int) error {
	s := &e.Shards[i]
	id, err := e.Identity("depctrl-shard-admin", "system:masters")
	if err != nil {
		return err
	}
	cfg, err := e.identityKubeconfig(id, s.URL+"/clusters/system:admin")
	if err != nil {
		return err
	}
	s.AdminKubeconfig = filepath.Join(e.Dir, "shard-"+s.Name+".kubeconfig")
	return clientcmd.WriteToFile(cfg, s.AdminKubeconfig)
}

// FreePorts asks the kernel for n distinct free loopback ports. Another
// process may take one before kcp binds it; that shows up as a start failure.
func FreePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitFor polls cond until it holds, the process exits, ctx ends or the
// timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, p *Process, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return nil
		}
		if p != nil {
			if done, err := p.Exited(); done {
				return fmt.Errorf("%s exited early: %v", p.name, err)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Command quickstart runs the depctrl quickstart on this machine: a local
// two-shard kcp and a local Kubernetes API server, the quickstart topology
// (runtime included) applied with Terraform through a development override
// of the provider built here, the runtime run from what Terraform deployed,
// and a blocked delete.
//
//	go run ./hack/quickstart up     # everything, then leaves kcp and the runtime running
//	go run ./hack/quickstart down   # stops everything and removes the state
//
// `make quickstart` and `make quickstart-down` build what it needs first.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/internal/kubectlplugin"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/podrunner"
)

const (
	runtimeNamespace = "depctrl-system"
	depCtrlPath      = "root:depctrl"
	networkPath      = "root:org:network"
	computePath      = "root:compute"
)

func main() {
	if len(os.Args) != 2 || (os.Args[1] != "up" && os.Args[1] != "down") {
		fmt.Fprintln(os.Stderr, "usage: quickstart up|down")
		os.Exit(2)
	}
	root, err := env.RepoRoot()
	if err != nil {
		fail(err)
	}
	q := &quickstart{root: root, dir: filepath.Join(root, ".quickstart"), bin: filepath.Join(root, "bin")}
	if os.Args[1] == "down" {
		if err := q.down(); err != nil {
			fail(err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := q.up(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "\nLogs are in %s; `make quickstart-down` stops everything.\n", q.dir)
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "\nquickstart failed: %v\n", err)
	os.Exit(1)
}

type quickstart struct {
	root, dir, bin string
	step           int
	e              *env.Env
	pkg            *providerPackage
}

func (q *quickstart) say(format string, args ...interface{}) {
	q.step++
	fmt.Printf("\n==> %d. %s\n", q.step, fmt.Sprintf(format, args...))
}

func (q *quickstart) up(ctx context.Context) error {
	start := time.Now()
	if _, err := os.Stat(filepath.Join(q.dir, "kcp.pid")); err == nil {
		return errors.New("a quickstart is already running: run `make quickstart-down` first")
	}
	if err := os.MkdirAll(q.dir, 0o755); err != nil {
		return err
	}

	q.say("Starting a local kcp with two shards, a cache server and a front-proxy, and a Kubernetes API server (30-90s); meanwhile packaging the provider as make release does, into a filesystem mirror")
	packaged := make(chan error, 1)
	go func() {
		var err error
		q.pkg, err = buildPackage(ctx, q.root, q.dir)
		packaged <- err
	}()
	if err := q.startKCP(ctx); err != nil {
		return err
	}
	if err := <-packaged; err != nil {
		return fmt.Errorf("packaging the provider: %w", err)
	}
	fmt.Printf("    provider package: %s (%s)\n", q.pkg.pkg.Zip, q.pkg.pkg.H1)
	fmt.Printf("    kcp front-proxy: %s\n    admin kubeconfig: %s\n    Kubernetes API server: %s\n", q.e.FrontProxyURL, q.e.AdminKubeconfig, q.e.Kube.Host)

	q.say("Starting the pod runner: this API server has no nodes, so it plays the kubelet and runs the runtime's pods from %s", q.bin)
	if err := q.startPodRunner(); err != nil {
		return err
	}

	q.say("terraform apply: workspaces, the dep-ctrl export, bindings, RBAC in root and on every shard, and the runtime (waits for its rollout)")
	if err := q.terraform(ctx, false); err != nil {
		return err
	}

	q.say("The API providers export their types (VPCs, VirtualMachines, ...) and the consumers on each shard bind them")
	if err := q.fixtures(ctx); err != nil {
		return err
	}

	q.say("terraform apply: the DependencyRules; Terraform waits until the webhook enforces them")
	if err := q.terraform(ctx, true); err != nil {
		return err
	}

	if err := q.demo(ctx); err != nil {
		return err
	}
	fmt.Printf("\nDone in %s. kcp, the Kubernetes API server and the runtime keep running:\n", time.Since(start).Round(time.Second))
	fmt.Printf("    export KUBECONFIG=%s\n", q.e.AdminKubeconfig)
	fmt.Printf("    kubectl --server %s/clusters/root:tenant-root get vpcs,virtualmachines -A\n", q.e.FrontProxyURL)
	fmt.Printf("    kubectl --kubeconfig %s -n %s get deployments,secrets,services\n", q.e.Kube.Kubeconfig, runtimeNamespace)
	fmt.Printf("    terraform -chdir=%s plan   (with TF_CLI_CONFIG_FILE=%s)\n", filepath.Join(q.dir, "terraform"), q.pkg.cliConfig)
	fmt.Println("Stop everything and remove the state with: make quickstart-down")
	return nil
}

// startKCP runs depctrl-testenv in its own session so that kcp outlives
// this command.
func (q *quickstart) startKCP(ctx context.Context) error {
	dir := filepath.Join(q.dir, "kcp")
	if err := startDetached(filepath.Join(q.bin, "depctrl-testenv"), []string{"-topology", string(env.TwoShards), "-kube", "-dir", dir},
		filepath.Join(q.dir, "kcp.log"), filepath.Join(q.dir, "kcp.pid")); err != nil {
		return err
	}
	descriptor := filepath.Join(dir, "env.json")
	err := waitFor(ctx, 6*time.Minute, "kcp to become ready", func() error {
		if !alive(filepath.Join(q.dir, "kcp.pid")) {
			log, _ := os.ReadFile(filepath.Join(q.dir, "kcp.log"))
			return errStop{fmt.Errorf("kcp exited:\n%s", log)}
		}
		// The descriptor names the API server once that is ready too.
		data, err := os.ReadFile(descriptor)
		if err != nil {
			return err
		}
		var e env.Env
		if err := json.Unmarshal(data, &e); err != nil || e.Kube == nil {
			return errors.New("the Kubernetes API server is not ready yet")
		}
		return nil
	})
	if err != nil {
		return err
	}
	q.e, err = env.Attach(descriptor)
	return err
}

// startPodRunner runs depctrl-podrunner detached for the runtime's
// namespace.
func (q *quickstart) startPodRunner() error {
	return startDetached(filepath.Join(q.bin, "depctrl-podrunner"), []string{
		"-kubeconfig", q.e.Kube.Kubeconfig, "-namespace", runtimeNamespace,
		"-bin-dir", q.bin, "-dir", filepath.Join(q.dir, "pods"),
	}, filepath.Join(q.dir, "podrunner.log"), filepath.Join(q.dir, "podrunner.pid"))
}

// identityKubeconfigs writes kcp kubeconfigs for the controller's and the
// webhook's own identities, pointing at the dep-ctrl workspace: what an
// operator would issue in a real installation.
func (q *quickstart) identityKubeconfigs() (controller, webhook string, err error) {
	dir := filepath.Join(q.dir, "identities")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	write := func(user string) (string, error) {
		id, err := q.e.Identity(user)
		if err != nil {
			return "", err
		}
		data, err := q.e.IdentityKubeconfig(id, depCtrlPath)
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, user+".kubeconfig")
		return p, os.WriteFile(p, data, 0o600)
	}
	if controller, err = write(env.ControllerUser); err != nil {
		return "", "", err
	}
	webhook, err = write(env.WebhookUser)
	return controller, webhook, err
}

// terraform applies examples/quickstart with the provider installed by
// terraform init from the quickstart's filesystem mirror (buildPackage), as
// a user without access to a registry installs it.
func (q *quickstart) terraform(ctx context.Context, rules bool) error {
	tfDir := filepath.Join(q.dir, "terraform")
	if err := os.MkdirAll(tfDir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(q.root, "examples", "quickstart")
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tfDir, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	shards := map[string]string{}
	for _, s := range q.e.Shards {
		shards[s.Name] = s.AdminKubeconfig
	}
	controllerKubeconfig, webhookKubeconfig, err := q.identityKubeconfigs()
	if err != nil {
		return err
	}
	vars, err := json.MarshalIndent(map[string]interface{}{
		"kcp_kubeconfig":        q.e.AdminKubeconfig,
		"kube_kubeconfig":       q.e.Kube.Kubeconfig,
		"shards":                shards,
		"controller_user":       env.ControllerUser,
		"webhook_user":          env.WebhookUser,
		"controller_kubeconfig": controllerKubeconfig,
		"webhook_kubeconfig":    webhookKubeconfig,
		// kcp runs outside the API server's "cluster": it calls the
		// webhook pod at the address the pod runner gives it.
		"webhook_url":   fmt.Sprintf("https://%s:%d/validate", podrunner.PodIP(runtimeNamespace, "depctrl-webhook", 0), deploy.DefaultWebhookPort),
		"install_rules": rules,
	}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tfDir, "terraform.tfvars.json"), vars, 0o644); err != nil {
		return err
	}
	tfEnv := append(os.Environ(), "TF_CLI_CONFIG_FILE="+q.pkg.cliConfig, "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1")
	if !rules {
		if err := q.pkg.pinVersion(tfDir); err != nil {
			return err
		}
		if err := q.pkg.init(ctx, tfDir, tfEnv); err != nil {
			return err
		}
	}
	args := []string{"apply", "-auto-approve", "-input=false", "-compact-warnings"}
	if fi, err := os.Stdout.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		args = append(args, "-no-color") // a log, not a terminal
	}
	cmd := exec.CommandContext(ctx, "terraform", args...)
	cmd.Dir = tfDir
	cmd.Env = tfEnv
	cmd.Stdout, cmd.Stderr = indent(os.Stdout), indent(os.Stderr)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("terraform apply in %s: %w", tfDir, err)
	}
	return nil
}

func (q *quickstart) fixtures(ctx context.Context) error {
	apply := func(path, docs string) error {
		cfg, err := q.e.AdminConfig(path)
		if err != nil {
			return err
		}
		if err := fixtures.ApplyYAML(ctx, cfg, docs); err != nil {
			return fmt.Errorf("in %s: %w", path, err)
		}
		return nil
	}
	if err := apply(networkPath, fixtures.ExportYAML(fixtures.VPCs, fixtures.FirewallRules)); err != nil {
		return err
	}
	if err := apply(computePath, fixtures.ExportYAML(fixtures.VirtualMachines, fixtures.ManagedDBs)); err != nil {
		return err
	}
	for _, s := range q.e.Shards {
		consumer := "root:tenant-" + s.Name
		if err := apply(consumer, fixtures.BindingYAML("network", networkPath, fixtures.VPCs.Group)+"---\n"+
			fixtures.BindingYAML("compute", computePath, fixtures.VirtualMachines.Group)+"---\n"+
			"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n"); err != nil {
			return err
		}
		fmt.Printf("    %s (shard %s) binds network.test.io and compute.test.io\n", consumer, s.Name)
	}
	return nil
}

// demo shows protection at work in the consumer on every shard.
func (q *quickstart) demo(ctx context.Context) error {
	for _, s := range q.e.Shards {
		consumer := "root:tenant-" + s.Name
		cfg, err := q.e.AdminConfig(consumer)
		if err != nil {
			return err
		}
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return err
		}
		vpcs := d.Resource(fixtures.VPCs.GVR()).Namespace("apps")
		vms := d.Resource(fixtures.VirtualMachines.GVR()).Namespace("apps")

		q.say("In %s (shard %s): create VPC vpc-1 and VirtualMachine vm-1 that references it", consumer, s.Name)
		if err := create(ctx, vpcs, fixtures.VPCs, "vpc-1", map[string]interface{}{"cidr": "10.0.0.0/16"}); err != nil {
			return err
		}
		if err := create(ctx, vms, fixtures.VirtualMachines, "vm-1", map[string]interface{}{"vpcRef": map[string]interface{}{"name": "vpc-1"}}); err != nil {
			return err
		}

		q.say("Delete vpc-1 while vm-1 references it: refused")
		err = vpcs.Delete(ctx, "vpc-1", metav1.DeleteOptions{})
		if err == nil {
			return errors.New("the delete went through: protection is not working")
		}
		if !strings.Contains(err.Error(), "still referenced by") {
			return fmt.Errorf("the delete failed for another reason: %w", err)
		}
		fmt.Printf("    denied: %v\n", err)

		q.say("Ask what blocks it: kubectl depctrl why vpc/vpc-1 -n apps (go install ./cmd/kubectl-depctrl)")
		why := []string{"why", "vpc/vpc-1", "-n", "apps", "--kubeconfig", q.e.AdminKubeconfig, "--server", q.e.FrontProxyURL + "/clusters/" + consumer}
		if code := kubectlplugin.Main(why, indent(os.Stdout), indent(os.Stderr)); code != kubectlplugin.ExitBlocked {
			return fmt.Errorf("kubectl depctrl why vpc/vpc-1 exited %d, want %d: vm-1 blocks the deletion", code, kubectlplugin.ExitBlocked)
		}
		q.say("Ask in which order the namespace can be emptied: kubectl depctrl order -n apps")
		order := []string{"order", "-n", "apps", "--kubeconfig", q.e.AdminKubeconfig, "--server", q.e.FrontProxyURL + "/clusters/" + consumer}
		if code := kubectlplugin.Main(order, indent(os.Stdout), indent(os.Stderr)); code != kubectlplugin.ExitOK {
			return fmt.Errorf("kubectl depctrl order -n apps exited %d, want %d: vm-1, then vpc-1", code, kubectlplugin.ExitOK)
		}

		q.say("Delete vm-1, then vpc-1: both go")
		if err := vms.Delete(ctx, "vm-1", metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting vm-1: %w", err)
		}
		fmt.Println("    vm-1 deleted")
		if err := vpcs.Delete(ctx, "vpc-1", metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("deleting vpc-1 after vm-1 is gone: %w", err)
		}
		fmt.Println("    vpc-1 deleted")
	}
	return nil
}

func create(ctx context.Context, c dynamic.ResourceInterface, a fixtures.APIType, name string, spec map[string]interface{}) error {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": a.Group + "/v1", "kind": a.Kind,
		"metadata": map[string]interface{}{"name": name, "namespace": "apps"},
		"spec":     spec,
	}}
	// A binding made a moment ago may take a few seconds to serve.
	return waitFor(ctx, time.Minute, "creating "+a.Resource+"/"+name, func() error {
		_, err := c.Create(ctx, u, metav1.CreateOptions{})
		if err == nil {
			fmt.Printf("    created %s/%s\n", a.Resource, name)
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

func (q *quickstart) down() error {
	stopped := false
	for _, name := range []string{"podrunner", "kcp"} {
		pidFile := filepath.Join(q.dir, name+".pid")
		pid, err := readPID(pidFile)
		if err != nil {
			continue
		}
		fmt.Printf("stopping %s (pid %d) ...\n", name, pid)
		// The whole session: the pod runner and kcp's test environment stop
		// their own children on SIGINT.
		_ = syscall.Kill(-pid, syscall.SIGINT)
		deadline := time.Now().Add(45 * time.Second)
		for alive(pidFile) && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if alive(pidFile) {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		stopped = true
	}
	if err := os.RemoveAll(q.dir); err != nil {
		return err
	}
	if stopped {
		fmt.Printf("stopped, and removed %s\n", q.dir)
	} else {
		fmt.Println("nothing was running")
	}
	return nil
}

// startDetached starts bin in a session of its own, so that it keeps
// running after this command exits, and records its pid.
func startDetached(bin string, args []string, logFile, pidFile string) error {
	log, err := os.Create(logFile)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", filepath.Base(bin), err)
	}
	// Reap it if it exits while this command still runs, so alive() sees
	// the exit.
	go func() { _ = cmd.Wait() }()
	return os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
}

func readPID(pidFile string) (int, error) {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

func alive(pidFile string) bool {
	pid, err := readPID(pidFile)
	if err != nil {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

// errStop ends waitFor at once.
type errStop struct{ error }

func waitFor(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		var stop errStop
		if errors.As(err, &stop) {
			return stop.error
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// indent prefixes every line written to w, so tool output nests under the
// step that runs it.
func indent(w *os.File) *prefixWriter { return &prefixWriter{w: w, bol: true} }

type prefixWriter struct {
	w   *os.File
	bol bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	for _, c := range b {
		if p.bol {
			if _, err := p.w.WriteString("    "); err != nil {
				return 0, err
			}
		}
		if _, err := p.w.Write([]byte{c}); err != nil {
			return 0, err
		}
		p.bol = c == '\n'
	}
	return len(b), nil
}

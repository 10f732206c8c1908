// Package podrunner plays the kubelet and the Deployment controller for the
// runtime's Deployments in a Kubernetes API server that has neither: it
// reads each Deployment and the Secrets and ConfigMaps its pods mount, and
// runs the bundled binaries locally with exactly the command, arguments,
// environment and files of the pod template. It then reports readiness in
// the Deployment's status, as the real controllers would.
//
// Two translations make a pod fit on one machine, and nothing else changes:
// each pod gets its own loopback address (PodIP), to which listen addresses
// of the form ":port" are bound, as a pod's network namespace would; and
// mount paths become directories under the runner's Dir.
package podrunner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// Runner runs the pods of the Deployments in one namespace.
type Runner struct {
	Client    kubernetes.Interface
	Namespace string
	// BinDir holds the binaries the image would: a container command's
	// base name is looked up here.
	BinDir string
	// Dir holds each pod's files and log.
	Dir string
	// Logf reports what the runner does; nil is silent.
	Logf func(format string, args ...any)

	mu   sync.Mutex
	pods map[string]*deploymentPods
}

type deploymentPods struct {
	revision string
	pods     []*pod
}

type pod struct {
	name    string
	ip      string
	dir     string
	logFile string
	spec    corev1.PodSpec
	proc    *env.Process
	// mounts maps a container mount path to its local directory.
	mounts   map[string]string
	restarts int
}

// PodIP is the loopback address of a replica of a Deployment. It is stable,
// so a test can name it (in a webhook URL and certificate) before the
// Deployment exists.
func PodIP(namespace, deployment string, replica int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(namespace + "/" + deployment))
	v := h.Sum32()
	return fmt.Sprintf("127.%d.%d.%d", 10+v%200, (v>>8)%250+1, replica+1)
}

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// Run syncs every interval until ctx ends, then stops every pod.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	defer r.StopAll()
	for {
		if err := r.Sync(ctx); err != nil && ctx.Err() == nil {
			r.logf("podrunner: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// StopAll stops every pod the runner started.
func (r *Runner) StopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, dp := range r.pods {
		r.stopPods(dp.pods)
		delete(r.pods, name)
	}
}

// Sync makes the running pods match the Deployments once: it starts,
// restarts and stops pods, refreshes mounted files, and writes status.
func (r *Runner) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[string]*deploymentPods{}
	}
	list, err := r.Client.AppsV1().Deployments(r.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Deployments in %s: %w", r.Namespace, err)
	}
	seen := map[string]bool{}
	for i := range list.Items {
		d := &list.Items[i]
		seen[d.Name] = true
		if err := r.syncDeployment(ctx, d); err != nil {
			r.logf("podrunner: Deployment %s/%s: %v", d.Namespace, d.Name, err)
		}
	}
	for name, dp := range r.pods {
		if !seen[name] {
			r.logf("podrunner: Deployment %s/%s is gone; stopping its pods", r.Namespace, name)
			r.stopPods(dp.pods)
			delete(r.pods, name)
		}
	}
	return nil
}

func (r *Runner) syncDeployment(ctx context.Context, d *appsv1.Deployment) error {
	revision := templateHash(d.Spec.Template)
	want := 1
	if d.Spec.Replicas != nil {
		want = int(*d.Spec.Replicas)
	}
	dp := r.pods[d.Name]
	if dp != nil && (dp.revision != revision || len(dp.pods) != want) {
		r.logf("podrunner: rolling Deployment %s/%s to revision %s with %d replicas", d.Namespace, d.Name, revision, want)
		r.stopPods(dp.pods)
		dp = nil
	}
	var startErr error
	if dp == nil {
		dp = &deploymentPods{revision: revision}
		for i := range want {
			p, err := r.startPod(ctx, d, revision, i)
			if err != nil {
				startErr = err
				break
			}
			dp.pods = append(dp.pods, p)
		}
		r.pods[d.Name] = dp
	}
	ready := 0
	for _, p := range dp.pods {
		// A kubelet refreshes Secret and ConfigMap volumes of running pods.
		if err := r.materialize(ctx, p); err != nil {
			r.logf("podrunner: refreshing files of %s: %v", p.name, err)
		}
		if done, err := p.proc.Exited(); done {
			p.restarts++
			r.logf("podrunner: %s exited (%v); restarting (restart %d); log %s", p.name, err, p.restarts, p.logFile)
			if err := r.exec(p); err != nil {
				return err
			}
			continue
		}
		if p.ready(ctx) {
			ready++
		}
	}
	if err := r.writeStatus(ctx, d, len(dp.pods), ready, startErr); err != nil {
		return err
	}
	return startErr
}

func (r *Runner) startPod(ctx context.Context, d *appsv1.Deployment, revision string, replica int) (*pod, error) {
	name := fmt.Sprintf("%s-%s-%d", d.Name, revision[:8], replica)
	dir := filepath.Join(r.Dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pod{
		name: name, ip: PodIP(d.Namespace, d.Name, replica), dir: dir,
		logFile: filepath.Join(dir, "pod.log"), spec: d.Spec.Template.Spec, mounts: map[string]string{},
	}
	if len(p.spec.Containers) != 1 {
		return nil, fmt.Errorf("pod template has %d containers; the runner runs one", len(p.spec.Containers))
	}
	for _, m := range p.spec.Containers[0].VolumeMounts {
		p.mounts[m.MountPath] = filepath.Join(dir, "volumes", m.Name)
	}
	if err := r.materialize(ctx, p); err != nil {
		return nil, err
	}
	if err := r.exec(p); err != nil {
		return nil, err
	}
	r.logf("podrunner: started %s at %s (log %s)", name, p.ip, p.logFile)
	return p, nil
}

// materialize writes the Secret and ConfigMap volumes of a pod, replacing
// files whose content changed.
func (r *Runner) materialize(ctx context.Context, p *pod) error {
	for _, v := range p.spec.Volumes {
		var data map[string][]byte
		switch {
		case v.Secret != nil:
			s, err := r.Client.CoreV1().Secrets(r.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: Secret %s: %w", v.Name, v.Secret.SecretName, err)
			}
			data = s.Data
		case v.ConfigMap != nil:
			cm, err := r.Client.CoreV1().ConfigMaps(r.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: ConfigMap %s: %w", v.Name, v.ConfigMap.Name, err)
			}
			data = map[string][]byte{}
			for k, s := range cm.Data {
				data[k] = []byte(s)
			}
		default:
			return fmt.Errorf("volume %s: only Secret and ConfigMap volumes are supported", v.Name)
		}
		dir := filepath.Join(p.dir, "volumes", v.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		for k, b := range data {
			f := filepath.Join(dir, k)
			if old, err := os.ReadFile(f); err == nil && string(old) == string(b) {
				continue
			}
			tmp := f + ".tmp"
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp, f); err != nil {
				return err
			}
		}
	}
	return nil
}

var bindAllRE = regexp.MustCompile(`^(.*=)?:(\d+)$`)

// exec starts the pod's container process.
func (r *Runner) exec(p *pod) error {
	c := p.spec.Containers[0]
	if len(c.Command) == 0 {
		return fmt.Errorf("container %s has no command; the runner does not read image entrypoints", c.Name)
	}
	bin := filepath.Join(r.BinDir, filepath.Base(c.Command[0]))
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("container command %s: no %s in %s", c.Command[0], filepath.Base(bin), r.BinDir)
	}
	args := make([]string, 0, len(c.Command)-1+len(c.Args))
	for _, a := range append(append([]string{}, c.Command[1:]...), c.Args...) {
		args = append(args, p.translate(a))
	}
	environ := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/"}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return fmt.Errorf("env %s: valueFrom is not supported by the runner", e.Name)
		}
		environ = append(environ, e.Name+"="+p.translate(e.Value))
	}
	proc, err := env.StartProcessWithEnv(p.name, bin, args, p.dir, p.logFile, environ)
	if err != nil {
		return err
	}
	p.proc = proc
	return nil
}

// translate maps a container path to the pod's directory and a bind-all
// listen address to the pod's IP.
func (p *pod) translate(s string) string {
	paths := make([]string, 0, len(p.mounts))
	for m := range p.mounts {
		paths = append(paths, m)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, m := range paths {
		s = strings.ReplaceAll(s, m, p.mounts[m])
	}
	if m := bindAllRE.FindStringSubmatch(s); m != nil {
		s = m[1] + p.ip + ":" + m[2]
	}
	return s
}

// ready runs the container's readiness probe (an HTTP GET), as the kubelet does.
func (p *pod) ready(ctx context.Context) bool {
	c := p.spec.Containers[0]
	probe := c.ReadinessProbe
	if probe == nil || probe.HTTPGet == nil {
		return true
	}
	port := probe.HTTPGet.Port.IntValue()
	if port == 0 {
		for _, cp := range c.Ports {
			if cp.Name == probe.HTTPGet.Port.String() {
				port = int(cp.ContainerPort)
			}
		}
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s://%s:%d%s", scheme, p.ip, port, probe.HTTPGet.Path), nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func (r *Runner) stopPods(pods []*pod) {
	for _, p := range pods {
		if p.proc != nil {
			_ = p.proc.Stop(10 * time.Second)
		}
	}
}

// writeStatus records what the Deployment controller would: all replicas
// are of the latest revision, and those whose probe passes are available.
func (r *Runner) writeStatus(ctx context.Context, d *appsv1.Deployment, running, ready int, startErr error) error {
	want := d.Status
	want.ObservedGeneration = d.Generation
	want.Replicas = int32(running)                    //nolint:gosec // small
	want.UpdatedReplicas = int32(running)             //nolint:gosec // small
	want.ReadyReplicas = int32(ready)                 //nolint:gosec // small
	want.AvailableReplicas = int32(ready)             //nolint:gosec // small
	want.UnavailableReplicas = int32(running - ready) //nolint:gosec // small
	cond := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
	if d.Spec.Replicas != nil && ready < int(*d.Spec.Replicas) {
		cond.Status, cond.Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
		cond.Message = fmt.Sprintf("%d of %d pods are ready.", ready, *d.Spec.Replicas)
		if startErr != nil {
			cond.Message += " The pod runner could not start a pod: " + startErr.Error()
		}
	}
	want.Conditions = []appsv1.DeploymentCondition{cond}
	if equalStatus(d.Status, want) {
		return nil
	}
	now := metav1.Now()
	want.Conditions[0].LastUpdateTime, want.Conditions[0].LastTransitionTime = now, now
	d = d.DeepCopy()
	d.Status = want
	_, err := r.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the next sync sees the new object
	}
	return err
}

func equalStatus(a, b appsv1.DeploymentStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Replicas != b.Replicas || a.UpdatedReplicas != b.UpdatedReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas || a.UnavailableReplicas != b.UnavailableReplicas ||
		len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status || a.Conditions[i].Message != b.Conditions[i].Message {
			return false
		}
	}
	return true
}

// templateHash identifies a pod template revision, as pod-template-hash does.
func templateHash(t corev1.PodTemplateSpec) string {
	data, _ := json.Marshal(t)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}

package env

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
)

// Kube is a Kubernetes API server with its etcd, where tests deploy the
// runtime. No controllers and no kubelet run: Deployments get no pods, and
// a deleted Namespace stays Terminating. test/podrunner plays the kubelet.
type Kube struct {
	// Kubeconfig is a system:masters kubeconfig for the API server.
	Kubeconfig string `json:"kubeconfig"`
	// Host is the API server URL.
	Host string `json:"host"`
	// LogFiles are the logs of etcd and kube-apiserver.
	LogFiles []string `json:"logFiles"`

	procs []*Process
}

// StartKube starts etcd and kube-apiserver (from `make kube`) on free
// loopback ports, keeping their files in dir.
func StartKube(ctx context.Context, dir string) (_ *Kube, retErr error) {
	apiserverBin, err := binary("kube-apiserver", "kube")
	if err != nil {
		return nil, err
	}
	etcdBin, err := binary("etcd", "kube")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ports, err := FreePorts(3)
	if err != nil {
		return nil, err
	}
	k := &Kube{Host: "https://127.0.0.1:" + strconv.Itoa(ports[2])}
	defer func() {
		if retErr != nil {
			_ = k.Stop()
		}
	}()
	if err := writeKubePKI(dir, k.Host); err != nil {
		return nil, err
	}
	f := func(name string) string { return filepath.Join(dir, name) }

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	etcd, err := StartProcess("etcd", etcdBin, []string{
		"--name=kube", "--data-dir=" + f("etcd-data"),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=kube=" + peerURL, "--unsafe-no-fsync",
	}, dir, f("etcd.log"))
	if err != nil {
		return nil, err
	}
	k.procs = append(k.procs, etcd)
	k.LogFiles = append(k.LogFiles, f("etcd.log"))

	apiserver, err := StartProcess("kube-apiserver", apiserverBin, []string{
		"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[2]),
		"--cert-dir=" + f("apiserver-certs"),
		"--tls-cert-file=" + f("serving.crt"), "--tls-private-key-file=" + f("serving.key"),
		"--client-ca-file=" + f("ca.crt"), "--etcd-servers=" + etcdURL,
		"--service-cluster-ip-range=10.0.0.0/24", "--service-account-issuer=" + k.Host + "/",
		"--service-account-key-file=" + f("sa.pub"), "--service-account-signing-key-file=" + f("sa.key"),
		"--authorization-mode=RBAC", "--disable-admission-plugins=ServiceAccount",
		"--endpoint-reconciler-type=none",
	}, dir, f("kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	k.procs = append(k.procs, apiserver)
	k.LogFiles = append(k.LogFiles, f("kube-apiserver.log"))
	k.Kubeconfig = f("admin.kubeconfig")

	cfg, err := k.Config()
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	err = waitFor(ctx, 2*time.Minute, apiserver, func() bool {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok"
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for kube-apiserver at %s: %w", k.Host, err)
	}
	return k, nil
}

// writeKubePKI writes a CA, the API server's serving certificate, an admin
// kubeconfig and the service account signing keys into dir.
func writeKubePKI(dir, host string) error {
	caCert, caKey, err := certs.NewCA("kube-ca", 365*24*time.Hour)
	if err != nil {
		return err
	}
	serving, err := certs.IssueServing(caCert, caKey, "kube-apiserver", []string{"127.0.0.1", "localhost", "10.0.0.1", "kubernetes.default.svc"}, 365*24*time.Hour)
	if err != nil {
		return err
	}
	adminCert, adminKey, err := certs.IssueClient(caCert, caKey, "kube-admin", []string{"system:masters"}, certValidity)
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	kc, err := clientcmd.Write(kubeconfig(host, caCert, adminCert, adminKey, "kube-admin"))
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":           caCert,
		"serving.crt":      serving.ServerCert,
		"serving.key":      serving.ServerKey,
		"sa.key":           pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)}),
		"sa.pub":           pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
		"admin.kubeconfig": kc,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Config is an admin client configuration for the API server.
func (k *Kube) Config() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", k.Kubeconfig, err)
	}
	tuneConfig(cfg)
	return cfg, nil
}

// Stop stops kube-apiserver, then etcd.
func (k *Kube) Stop() error {
	var firstErr error
	for i := len(k.procs) - 1; i >= 0; i-- {
		if err := k.procs[i].Stop(10 * time.Second); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	k.procs = nil
	return firstErr
}

var sharedKube struct {
	sync.Mutex
	kube *Kube
	dir  string
}

// KubeForTest returns a Kubernetes API server for a test: the one of the
// environment named by DEPCTRL_TEST_ENV when that has one, otherwise one
// started for the package and stopped by RunTests.
func KubeForTest(t testing.TB) *Kube {
	t.Helper()
	if p := os.Getenv(AttachVariable); p != "" {
		e, err := attachShared(p)
		if err != nil {
			t.Fatalf("attaching to the environment named by %s: %v", AttachVariable, err)
		}
		if e.Kube != nil {
			return e.Kube
		}
	}
	sharedKube.Lock()
	defer sharedKube.Unlock()
	if sharedKube.kube != nil {
		return sharedKube.kube
	}
	dir, err := os.MkdirTemp("", "depctrl-kube-")
	if err != nil {
		t.Fatal(err)
	}
	t.Log("starting kube-apiserver ...")
	k, err := StartKube(context.Background(), dir)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Logf("kube-apiserver ready at %s", k.Host)
	sharedKube.kube, sharedKube.dir = k, dir
	return k
}

func stopSharedKube() error {
	sharedKube.Lock()
	defer sharedKube.Unlock()
	if sharedKube.kube == nil {
		return nil
	}
	err := sharedKube.kube.Stop()
	_ = os.RemoveAll(sharedKube.dir)
	sharedKube.kube = nil
	return err
}

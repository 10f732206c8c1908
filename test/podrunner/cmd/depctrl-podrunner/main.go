// Command depctrl-podrunner plays the kubelet for the runtime's Deployments
// in a Kubernetes API server without nodes (see package podrunner): it runs
// the bundled binaries exactly as the pod templates say until interrupted.
//
//	depctrl-podrunner -kubeconfig kube.kubeconfig -namespace depctrl-system -bin-dir bin -dir .pods
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/depctrl/terraform-provider-depctrl/test/podrunner"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the Kubernetes API server")
	namespace := flag.String("namespace", "depctrl-system", "namespace whose Deployments to run")
	binDir := flag.String("bin-dir", "bin", "directory with depctrl-controller and depctrl-webhook")
	dir := flag.String("dir", "", "directory for the pods' files and logs (required)")
	flag.Parse()
	if *kubeconfig == "" || *dir == "" {
		fmt.Fprintln(os.Stderr, "depctrl-podrunner: -kubeconfig and -dir are required")
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("loading %s: %v", *kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &podrunner.Runner{Client: client, Namespace: *namespace, BinDir: *binDir, Dir: *dir, Logf: log.Printf}
	log.Printf("running the Deployments of namespace %s from %s", *namespace, *binDir)
	r.Run(ctx, time.Second)
}

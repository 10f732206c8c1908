// Package kubectlplugin is kubectl-depctrl, the kubectl plugin that
// answers what deletion protection decides: which dependents block a
// deletion right now (why), what references what in a workspace (refs), and
// in which order its objects can be deleted (order). It follows kubectl's and kcp's plugins in how
// it finds its server: the kubeconfig's current context, whose server URL
// names the workspace (kubectl ws switches it), or the usual --kubeconfig,
// --context, --server and --namespace flags.
package kubectlplugin

import (
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// Exit codes of every command: what scripts rely on.
const (
	// ExitOK: answered, and nothing stands in the way.
	ExitOK = 0
	// ExitBlocked: answered, and the deletion would be refused.
	ExitBlocked = 1
	// ExitError: the question could not be answered.
	ExitError = 2
)

// Version is what --version prints.
var Version = "dev"

// exitError carries a command's exit code to Main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

// NewCommand is kubectl-depctrl with its subcommands, writing to out.
func NewCommand(out, errOut io.Writer) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:           "kubectl-depctrl",
		Short:         "Ask deletion protection what it decides",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(root.PersistentFlags())
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(newWhy(flags), newRefs(flags), newOrder(flags))
	return root
}

// Main runs kubectl-depctrl with args and returns its exit code.
func Main(args []string, out, errOut io.Writer) int {
	cmd := NewCommand(out, errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err == nil {
		return ExitOK
	}
	if e, ok := err.(*exitError); ok {
		if e.err != nil && e.code != ExitBlocked {
			cmd.PrintErrln("error:", e.err)
		}
		return e.code
	}
	cmd.PrintErrln("error:", err)
	return ExitError
}

package provider

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
)

// TestAccProvider_userAgent: kcp sees the provider's name and version in the user
// agent of its requests, as kcp's audit log records them.
func TestAccProvider_userAgent(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	logs, _ := filepath.Glob(filepath.Join(e.Dir, "logs", "audit-*.log"))
	if len(logs) == 0 {
		t.Skip("this kcp writes no audit log (the two-shard environment does)")
	}
	org := testOrg(t, e)
	name := env.UniqueName("ua")
	const version = "1.2.3-useragent"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: map[string]func() (tfprotov6.ProviderServer, error){
			"depctrl": providerserver.NewProtocol6WithError(New(version)()),
		},
		Steps: []resource.TestStep{{Config: workspaceResourceConfig(e, org.Path, name, "")}},
	})
	want := `"userAgent":"terraform-provider-depctrl/` + version + `"`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check.Eventually(ctx, t, 30*time.Second, "the audit log to record the workspace's create with the provider's user agent", func() error {
		for _, f := range logs {
			file, err := os.Open(f)
			if err != nil {
				return err
			}
			s := bufio.NewScanner(file)
			s.Buffer(make([]byte, 1<<20), 1<<24)
			for s.Scan() {
				line := s.Text()
				if strings.Contains(line, want) && strings.Contains(line, `"verb":"create"`) && strings.Contains(line, name) {
					_ = file.Close()
					return nil
				}
			}
			_ = file.Close()
		}
		return fmt.Errorf("no create of workspace %s with %s in %v", name, want, logs)
	})
}

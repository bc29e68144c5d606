// Command resourceclaims is the jobset-addons resourceclaims controller.
package main

import "github.com/jobset-addons/jobset-addons/pkg/addon"

func main() {
	addon.Main(addon.Options{Name: "resourceclaims"})
}

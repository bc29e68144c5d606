// Command podgroups is the jobset-addons podgroups controller.
package main

import "github.com/jobset-addons/jobset-addons/pkg/addon"

func main() {
	addon.Main(addon.Options{Name: "podgroups"})
}

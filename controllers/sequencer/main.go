// Command sequencer is the jobset-addons sequencer controller.
package main

import "github.com/jobset-addons/jobset-addons/pkg/addon"

func main() {
	addon.Main(addon.Options{Name: "sequencer"})
}

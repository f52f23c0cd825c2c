/* no_symbol.c - a shared library that looks like a plugin but exports its
 * entry point under the wrong name, as a typo would; the loader must refuse
 * it without calling anything. */
#include <singa/singa_abi.h>

SINGA_EXPORT singa_status* singa_plugin_initialize(const singa_host_api* host, singa_plugin* plugin) {
  (void)plugin;
  return host->status_new(SINGA_INTERNAL, "no_symbol: this function must never be called");
}

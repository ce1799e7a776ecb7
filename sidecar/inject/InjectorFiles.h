#pragma once
// What `leasehold inject` reads from files and reads again while it runs: the parameters
// (the ConfigMap mounted as a directory; kubelet updates it in place when the ConfigMap is
// edited) and the serving certificate and key (a Secret mounted as files, which cert-manager or
// an operator rotates). Plain blocking reads of a few small files: InjectCommand polls every
// couple of seconds, on the loop.
#include <string>

#include "inject/AdmissionReviewHandler.h"

namespace leasehold::inject {

class InjectorFiles {
 public:
  struct Paths {
    std::string paramsDir;
    std::string certFile;
    std::string keyFile;
  };
  // What refresh() found different from the previous read (the first read: everything).
  struct Changes {
    bool params = false;
    bool certificate = false;
    std::string certificateError;  // the certificate or key file could not be read
  };

  explicit InjectorFiles(Paths paths) : paths_(std::move(paths)) {}

  Changes refresh();
  const Paths& paths() const { return paths_; }
  // The parameters, or why there are none ("DIR: key image is missing").
  const ParamsState& params() const { return params_; }
  // The last certificate and key read whole (both files readable).
  const std::string& certPem() const { return certPem_; }
  const std::string& keyPem() const { return keyPem_; }
  // The certificate read could not be used (a key from before a rotation next to the new
  // certificate): the next refresh() reports it as changed again, so it is tried again.
  void forgetCertificate() {
    certPem_.clear();
    keyPem_.clear();
  }

 private:
  Paths paths_;
  bool first_ = true;
  ParamsState params_ = std::string("not read yet");
  std::string certPem_;
  std::string keyPem_;
};

}  // namespace leasehold::inject

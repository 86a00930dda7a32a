#include "tests/support/qt_test_app.hpp"

#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QStandardPaths>
#include <QWidget>
#include <memory>

namespace gparity::testing {
namespace {

std::unique_ptr<QApplication>& app_instance() {
  static std::unique_ptr<QApplication> instance;
  return instance;
}

class AppEnvironment : public ::testing::Environment {
 public:
  void TearDown() override { app_instance().reset(); }
};
const auto* const kAppEnvironment = ::testing::AddGlobalTestEnvironment(new AppEnvironment);  // gtest owns it

}  // namespace

QApplication& app() {
  static int argc = 1;
  static char name[] = "gparity_gui_tests";
  static char* argv[] = {name, nullptr};
  auto& instance = app_instance();
  if (!instance) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QCoreApplication::setOrganizationName(QStringLiteral("gparity-tests"));
    instance = std::make_unique<QApplication>(argc, argv);
    QStandardPaths::setTestModeEnabled(true);  // recent files go to a test location
  }
  return *instance;
}

void screenshot(QWidget& w, const char* name) {
  const QByteArray dir = qgetenv("GPARITY_GUI_SCREENSHOTS");
  if (dir.isEmpty()) return;
  QDir().mkpath(QString::fromLocal8Bit(dir));
  w.grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name) +
                QStringLiteral(".png"));
}

}  // namespace gparity::testing
